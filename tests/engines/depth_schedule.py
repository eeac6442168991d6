"""Correct: children in a dict keyed by id (insertion order), a depth-based schedule (longest path from the root), numbers wrapped in one helper."""

import math
import random


def _wrap(x):
    return x if isinstance(x, Value) else Value(x)


class Value:
    def __init__(self, data, _children=(), _op="", label=""):
        self.data = data
        self.grad = 0
        self._backward = lambda: None
        self._prev = {id(c): c for c in _children}.values()
        self._op = _op
        self.label = label

    def __repr__(self):
        return "Value(data=%r)" % (self.data,)

    def __add__(self, other):
        other = _wrap(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad = self.grad + out.grad
            other.grad = other.grad + out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = _wrap(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad = self.grad + other.data * out.grad
            other.grad = other.grad + self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(self.data**k, (self,), "pow")

        def _backward():
            self.grad = self.grad + k * self.data ** (k - 1) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad = self.grad + out.data * out.grad

        out._backward = _backward
        return out

    def tanh(self):
        x = self.data
        t = (math.exp(x) - math.exp(-x)) / (math.exp(x) + math.exp(-x))
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad = self.grad + (1 - t**2) * out.grad

        out._backward = _backward
        return out

    def backward(self):
        # depth = longest distance from the root; a node runs only after every consumer (all shallower)
        depth = {id(self): 0}
        nodes = {id(self): self}
        changed = True
        while changed:
            changed = False
            for node in list(nodes.values()):
                for child in node._prev:
                    d = depth[id(node)] + 1
                    if depth.get(id(child), -1) < d:
                        depth[id(child)] = d
                        nodes[id(child)] = child
                        changed = True
        self.grad = 1
        for key in sorted(nodes, key=lambda k: depth[k]):
            nodes[key]._backward()

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return -self + other

    def __truediv__(self, other):
        return self * other**-1

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other


class Neuron:
    def __init__(self, nin):
        self.params = [Value(random.uniform(-1, 1)) for _ in range(nin + 1)]

    def __call__(self, x):
        *w, b = self.params
        return sum((wi * xi for wi, xi in zip(w, x)), b).tanh()

    def parameters(self):
        return list(self.params)


class Layer:
    def __init__(self, nin, nout):
        self.neurons = [Neuron(nin) for _ in range(nout)]

    def __call__(self, x):
        outs = [n(x) for n in self.neurons]
        return outs[0] if len(outs) == 1 else outs

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP:
    def __init__(self, nin, nouts):
        sizes = [nin] + list(nouts)
        self.layers = [Layer(sizes[i], sizes[i + 1]) for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def mse_loss(model, xs, ys):
    return sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)


def train(model, xs, ys, steps, lr):
    losses = []
    for step in range(steps):
        loss = mse_loss(model, xs, ys)
        losses.append(loss.data)
        for p in model.parameters():
            p.grad = 0
        loss.backward()
        for p in model.parameters():
            p.data -= lr * p.grad
    return losses
