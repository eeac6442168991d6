"""Correct: __eq__/__hash__ written out as identity, a fancy __repr__, a node factory, topo sort as a method, _backward as bound closures."""

import math
import random


class Value:
    def __init__(self, data, _children=(), _op="", label=""):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = frozenset(_children)
        self._op = _op
        self.label = label

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __repr__(self):
        name = f"{self.label} " if self.label else ""
        op = f" ← {self._op}" if self._op else ""
        return f"⟨{name}data={self.data:.3f} grad={self.grad:+.3f}{op}⟩"

    def _node(self, data, children, op, local_grads):
        # local_grads: d out / d child for each child, in order
        out = Value(data, children, op)

        def _backward():
            for child, g in zip(children, local_grads()):
                child.grad += g * out.grad

        out._backward = _backward
        return out

    @staticmethod
    def _v(x):
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, other):
        other = self._v(other)
        return self._node(self.data + other.data, (self, other), "+", lambda: (1.0, 1.0))

    def __radd__(self, other):
        return self._v(other) + self

    def __mul__(self, other):
        other = self._v(other)
        return self._node(self.data * other.data, (self, other), "*", lambda: (other.data, self.data))

    def __rmul__(self, other):
        return self._v(other) * self

    def __pow__(self, k):
        return self._node(self.data**k, (self,), f"**{k}", lambda: (k * self.data ** (k - 1),))

    def __neg__(self):
        return self._node(-self.data, (self,), "neg", lambda: (-1.0,))

    def __sub__(self, other):
        return self + (-self._v(other))

    def __rsub__(self, other):
        return self._v(other) - self

    def __truediv__(self, other):
        return self * self._v(other) ** -1

    def exp(self):
        e = math.exp(self.data)
        return self._node(e, (self,), "exp", lambda: (e,))

    def tanh(self):
        t = math.tanh(self.data)
        return self._node(t, (self,), "tanh", lambda: (1 - t * t,))

    def topological_order(self):
        order, seen = [], set()

        def visit(v):
            if v not in seen:
                seen.add(v)
                for c in v._prev:
                    visit(c)
                order.append(v)

        visit(self)
        return order

    def backward(self):
        self.grad = 1.0
        for v in reversed(self.topological_order()):
            v._backward()


class Module:
    def parameters(self):
        return []


class Neuron(Module):
    def __init__(self, nin):
        self.w = [Value(random.uniform(-1, 1), label=f"w{i}") for i in range(nin)]
        self.b = Value(random.uniform(-1, 1), label="b")

    def __call__(self, x):
        return (sum(w * xi for w, xi in zip(self.w, x)) + self.b).tanh()

    def parameters(self):
        return [*self.w, self.b]


class Layer(Module):
    def __init__(self, nin, nout):
        self.neurons = [Neuron(nin) for _ in range(nout)]

    def __call__(self, x):
        outs = [n(x) for n in self.neurons]
        return outs[0] if len(outs) == 1 else outs

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP(Module):
    def __init__(self, nin, nouts):
        sizes = [nin, *nouts]
        self.layers = [Layer(sizes[i], sizes[i + 1]) for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def mse_loss(model, xs, ys):
    n = len(xs)
    return sum(((model(x) - y) ** 2 for x, y in zip(xs, ys)), Value(0.0)) / n


def train(model, xs, ys, steps, lr):
    losses = []
    for _ in range(steps):
        for p in model.parameters():
            p.grad = 0.0
        loss = mse_loss(model, xs, ys)
        loss.backward()
        losses.append(loss.data)
        for p in model.parameters():
            p.data -= lr * p.grad
    return losses
