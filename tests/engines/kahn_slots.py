"""Correct: Kahn-style topological sort (in-degrees), __slots__, children as a tuple, explicit _backward for every op."""

import math
import random
from collections import deque


class Value:
    __slots__ = ("data", "grad", "_backward", "_prev", "_op", "label")

    def __init__(self, data, _children=(), _op="", label=""):
        self.data = float(data)
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = tuple(_children)
        self._op = _op
        self.label = label

    def __repr__(self):
        return f"Value({self.data!r})"

    @staticmethod
    def _lift(x):
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, other):
        other = Value._lift(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    __radd__ = __add__

    def __mul__(self, other):
        other = Value._lift(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    __rmul__ = __mul__

    def __neg__(self):
        out = Value(-self.data, (self,), "neg")

        def _backward():
            self.grad -= out.grad

        out._backward = _backward
        return out

    def __sub__(self, other):
        other = Value._lift(other)
        out = Value(self.data - other.data, (self, other), "-")

        def _backward():
            self.grad += out.grad
            other.grad -= out.grad

        out._backward = _backward
        return out

    def __rsub__(self, other):
        return Value._lift(other) - self

    def __truediv__(self, other):
        other = Value._lift(other)
        out = Value(self.data / other.data, (self, other), "/")

        def _backward():
            self.grad += out.grad / other.data
            other.grad -= self.data / other.data**2 * out.grad

        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(self.data**k, (self,), f"**{k}")

        def _backward():
            self.grad += k * self.data ** (k - 1) * out.grad

        out._backward = _backward
        return out

    def tanh(self):
        out = Value(math.tanh(self.data), (self,), "tanh")

        def _backward():
            self.grad += (1 - out.data**2) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def backward(self):
        # count each node's consumers (an edge per use, so a + a counts twice), then peel from the root
        indegree, seen, todo = {}, {id(self)}, [self]
        while todo:
            node = todo.pop()
            for child in node._prev:
                indegree[id(child)] = indegree.get(id(child), 0) + 1
                if id(child) not in seen:
                    seen.add(id(child))
                    todo.append(child)
        self.grad = 1.0
        ready = deque([self])
        while ready:
            node = ready.popleft()
            node._backward()
            for child in node._prev:
                indegree[id(child)] -= 1
                if indegree[id(child)] == 0:
                    ready.append(child)


class Neuron:
    def __init__(self, nin):
        self.w = [Value(random.gauss(0, 1)) for _ in range(nin)]
        self.b = Value(random.gauss(0, 1))

    def __call__(self, x):
        return (sum(wi * xi for wi, xi in zip(self.w, x)) + self.b).tanh()

    def parameters(self):
        return self.w + [self.b]


class Layer:
    def __init__(self, nin, nout):
        self.neurons = [Neuron(nin) for _ in range(nout)]

    def __call__(self, x):
        outs = [n(x) for n in self.neurons]
        return outs if len(outs) > 1 else outs[0]

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP:
    def __init__(self, nin, nouts):
        sz = [nin, *nouts]
        self.layers = [Layer(a, b) for a, b in zip(sz, sz[1:])]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def mse_loss(model, xs, ys):
    errors = [(y - model(x)) ** 2 for x, y in zip(xs, ys)]
    return sum(errors) / len(errors)


def train(model, xs, ys, steps, lr):
    history = []
    params = model.parameters()
    for _ in range(steps):
        loss = mse_loss(model, xs, ys)
        history.append(float(loss.data))
        for p in params:
            p.grad = 0.0
        loss.backward()
        for p in params:
            p.data = p.data - lr * p.grad
    return history
