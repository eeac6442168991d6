"""A correct engine whose operators take only Values (no number coercion, no numbers on the left): -a, a - b and
a / b are nodes of their own; the net wraps its inputs and targets in Value itself."""

import math
import random


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = tuple(_children)
        self._op = _op

    def __repr__(self):
        return f"Value({self.data!r})"

    def _node(self, data, children, op, slopes):
        out = Value(data, children, op)

        def _backward():
            for child, slope in zip(children, slopes()):
                child.grad += slope * out.grad

        out._backward = _backward
        return out

    def __add__(self, other):
        return self._node(self.data + other.data, (self, other), "+", lambda: (1.0, 1.0))

    def __mul__(self, other):
        return self._node(self.data * other.data, (self, other), "*", lambda: (other.data, self.data))

    def __neg__(self):
        return self._node(-self.data, (self,), "neg", lambda: (-1.0,))

    def __sub__(self, other):
        return self._node(self.data - other.data, (self, other), "-", lambda: (1.0, -1.0))

    def __truediv__(self, other):
        return self._node(self.data / other.data, (self, other), "/",
                          lambda: (1 / other.data, -self.data / other.data**2))

    def __pow__(self, k):
        return self._node(self.data**k, (self,), f"**{k}", lambda: (k * self.data ** (k - 1),))

    def tanh(self):
        t = math.tanh(self.data)
        return self._node(t, (self,), "tanh", lambda: (1 - t * t,))

    def exp(self):
        e = math.exp(self.data)
        return self._node(e, (self,), "exp", lambda: (e,))

    def backward(self):
        order, seen = [], set()

        def visit(v):
            if id(v) in seen:
                return
            seen.add(id(v))
            for c in v._prev:
                visit(c)
            order.append(v)

        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            v._backward()


def total(values):
    out = values[0]
    for v in values[1:]:
        out = out + v
    return out


class Neuron:
    def __init__(self, nin):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(random.uniform(-1, 1))

    def __call__(self, x):
        x = [xi if isinstance(xi, Value) else Value(xi) for xi in x]
        return total([wi * xi for wi, xi in zip(self.w, x)] + [self.b]).tanh()

    def parameters(self):
        return self.w + [self.b]


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
        sizes = [nin] + nouts
        self.layers = [Layer(sizes[i], sizes[i + 1]) for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
            x = x if isinstance(x, list) else [x]
        return x[0] if len(x) == 1 else x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def mse_loss(model, xs, ys):
    errors = [model(x) - Value(y) for x, y in zip(xs, ys)]
    return total([e * e for e in errors]) / Value(len(xs))


def train(model, xs, ys, steps, lr):
    losses = []
    for _ in range(steps):
        loss = mse_loss(model, xs, ys)
        losses.append(loss.data)
        for p in model.parameters():
            p.grad = 0.0
        loss.backward()
        for p in model.parameters():
            p.data -= lr * p.grad
    return losses
