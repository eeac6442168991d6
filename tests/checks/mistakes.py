"""Known learner mistakes, each an exact text substitution on tests/engines/reference.py."""

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engine_corpus import REFERENCE

from autograder.checks import CheckResult
from autograder.cli import check_file
from autograder.loader import load

ADD_BWD = "            self.grad += out.grad\n            other.grad += out.grad\n"
MUL_SELF = "            self.grad += other.data * out.grad\n"
MUL_OTHER = "            other.grad += self.data * out.grad\n"
BACKWARD = '''    def backward(self):
        topo, visited = [], set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()
'''
RECURSIVE_BACKWARD = '''    def backward(self):
        self.grad = 1.0
        self._propagate()

    def _propagate(self):
        self._backward()
        for child in self._prev:
            child._propagate()
'''
BFS_BACKWARD = '''    def backward(self):
        self.grad = 1.0
        queue, seen = [self], {id(self)}
        while queue:
            node = queue.pop(0)
            node._backward()
            for child in node._prev:
                if id(child) not in seen:
                    seen.add(id(child))
                    queue.append(child)
'''
ADD_TAIL = "            other.grad += out.grad\n\n        out._backward = _backward\n        return out\n"
DIV_VIA_POW = "    def __truediv__(self, other):\n        return self * other**-1\n"
POSTORDER = "                for child in v._prev:\n                    build_topo(child)\n                topo.append(v)\n"
PREORDER = "                topo.append(v)\n                for child in v._prev:\n                    build_topo(child)\n"
DIV_DIRECT = '''    def __truediv__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data / other.data, (self, other), "/")

        def _backward():
            self.grad += out.grad / other.data
            other.grad += self.data / other.data**2 * out.grad

        out._backward = _backward
        return out
'''
EQ_BY_VALUE = '''    def __eq__(self, other):
        return isinstance(other, Value) and self.data == other.data

    def __hash__(self):
        return hash(self.data)

    def __repr__(self):'''
TRAIN_LOOP = '''        loss = mse_loss(model, xs, ys)
        losses.append(loss.data)
        for p in model.parameters():
            p.grad = 0.0
        loss.backward()
        for p in model.parameters():
            p.data -= lr * p.grad
'''


@dataclass(frozen=True)
class Mistake:
    """A learner mistake: where it lives (`target`), the substitutions that make it, what the message must say."""

    name: str
    target: str
    subs: tuple[tuple[str, str], ...]
    says: tuple[str, ...] = ()  # fragments the failing message must contain (besides naming the target's check)

    def source(self) -> str:
        """The reference engine with the mistake applied; every substitution must apply exactly once."""
        return substituted(REFERENCE, self.subs, self.name)


def substituted(base: str, subs: tuple[tuple[str, str], ...], name: str = "") -> str:
    """`base` with each (old, new) applied; every old text must occur exactly once, and the result must differ."""
    src = base
    for old, new in subs:
        assert src.count(old) == 1, f"{name}: {old!r} occurs {src.count(old)} times"
        src = src.replace(old, new)
    assert src != base, name
    return src


def _one(name: str, target: str, old: str, new: str, *says: str) -> Mistake:
    return Mistake(name, target, ((old, new),), says)


MISTAKES = [
    _one("add_assigns_self", "Value.__add__", ADD_BWD, ADD_BWD.replace("self.grad +=", "self.grad ="), "+="),
    _one("add_assigns_other", "Value.__add__", ADD_BWD, ADD_BWD.replace("other.grad +=", "other.grad ="), "+="),
    _one("mul_assigns_self", "Value.__mul__", MUL_SELF, MUL_SELF.replace("+=", "="), "+="),
    _one("mul_assigns_other", "Value.__mul__", MUL_OTHER, MUL_OTHER.replace("+=", "="), "+="),
    _one("add_missing_upstream", "Value.__add__", ADD_BWD, ADD_BWD.replace("out.grad", "1.0"), "out.grad"),
    Mistake("mul_missing_upstream", "Value.__mul__",
            ((MUL_SELF, MUL_SELF.replace(" * out.grad", "")), (MUL_OTHER, MUL_OTHER.replace(" * out.grad", ""))),
            ("out.grad",)),
    Mistake("mul_unswapped", "Value.__mul__",
            ((MUL_SELF, MUL_SELF.replace("other.data", "self.data")), (MUL_OTHER, MUL_OTHER.replace("self.data", "other.data"))),
            ("unswapped",)),
    _one("mul_number_not_wrapped", "Value.__mul__",
         "        other = other if isinstance(other, Value) else Value(other)\n        out = Value(self.data * other.data",
         "        out = Value(self.data * other.data", "AttributeError"),
    _one("mul_backward_never_assigned", "Value.__mul__",
         "            other.grad += self.data * out.grad\n\n        out._backward = _backward\n",
         "            other.grad += self.data * out.grad\n\n", "_backward"),
    _one("tanh_uses_input", "Value.tanh", "(1 - t**2)", "(1 - self.data**2)", "OUTPUT"),
    _one("tanh_drops_one_minus", "Value.tanh", "(1 - t**2)", "t**2", "the output squared alone"),
    _one("tanh_forward_is_sinh", "Value.tanh", "t = math.tanh(self.data)", "t = math.sinh(self.data)", "forward value"),
    _one("exp_derivative_is_input", "Value.exp", "self.grad += out.data * out.grad", "self.grad += self.data * out.grad", "exp"),
    _one("pow_derivative_keeps_power", "Value.__pow__", "k * self.data ** (k - 1)", "k * self.data**k", "the power is not lowered"),
    _one("div_other_sign", "Value.__truediv__", DIV_VIA_POW, DIV_DIRECT, "wrong sign"),
    _one("neg_is_identity", "Value.__neg__", "return self * -1", "return self * 1", "sign"),
    _one("sub_reversed", "Value.__sub__", "    def __sub__(self, other):\n        return self + (-other)",
         "    def __sub__(self, other):\n        return other + (-self)", "sign"),
    _one("rsub_reversed", "Value.__rsub__", "return other + (-self)", "return self + (-other)", "sign"),
    _one("radd_expects_value", "Value.__radd__", "    def __radd__(self, other):\n        return self + other",
         "    def __radd__(self, other):\n        return Value(other.data + self.data, (other, self))", "__radd__"),
    _one("rmul_detached", "Value.__rmul__", "    def __rmul__(self, other):\n        return self * other",
         "    def __rmul__(self, other):\n        return Value(other * self.data)", "stayed 0"),
    _one("repr_hides_data", "Value.__repr__", 'return f"Value(data={self.data:.4f}, grad={self.grad:.4f})"',
         'return f"Value(grad={self.grad})"', "does not show the data"),
    _one("root_not_seeded", "Value.backward", "        self.grad = 1.0\n        for node in reversed(topo):",
         "        for node in reversed(topo):", "seed"),
    _one("forward_order", "Value.backward", "for node in reversed(topo):", "for node in topo:", "REVERSE"),
    _one("topo_preorder", "Value.backward", POSTORDER, PREORDER, "expected"),
    _one("no_visited_set", "Value.backward", "            if v not in visited:", "            if True:", "visited set"),
    _one("recursion_without_topo", "Value.backward", BACKWARD, RECURSIVE_BACKWARD, "visited set"),
    _one("breadth_first_order", "Value.backward", BACKWARD, BFS_BACKWARD, "topological"),
    _one("eq_hash_by_value", "Value.__eq__", "    def __repr__(self):", EQ_BY_VALUE, "__eq__"),
    _one("neuron_without_tanh", "Neuron", "return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).tanh()",
         "return sum((wi * xi for wi, xi in zip(self.w, x)), self.b)", "tanh is missing"),
    _one("neuron_without_bias", "Neuron", "return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).tanh()",
         "return sum(wi * xi for wi, xi in zip(self.w, x)).tanh()", "expected"),
    _one("parameters_bias_first", "Neuron", "return self.w + [self.b]", "return [self.b] + self.w", "bias before its weights"),
    _one("layer_list_for_one_output", "Layer", "return outs[0] if len(outs) == 1 else outs", "return outs", "not a list"),
    _one("mlp_layers_not_chained", "MLP", "        for layer in self.layers:\n            x = layer(x)\n        return x",
         "        for layer in self.layers:\n            out = layer(x)\n        return out", "expected"),
    _one("mse_is_sum", "mse_loss", "for x, y in zip(xs, ys)) / len(xs)", "for x, y in zip(xs, ys))", "sum of squared errors"),
    _one("train_without_zero_grad", "train", "            p.grad = 0.0\n", "            pass\n", "zeroed"),
    _one("train_ascends", "train", "p.data -= lr * p.grad", "p.data += lr * p.grad", "move up the gradient"),
    _one("train_records_after_update", "train", TRAIN_LOOP,
         TRAIN_LOOP.replace("        losses.append(loss.data)\n", "") + "        losses.append(mse_loss(model, xs, ys).data)\n",
         "after that step's update"),
    _one("train_never_backward", "train", "        loss.backward()\n", "", "expected losses"),
    _one("train_returns_nothing", "train", "    return losses", "    return None", "NoneType"),
]

# Slips of issue 10: each must fail at the check of its own method, with a hint.
MISTAKES += [
    _one("add_records_no_children", "Value.__add__", 'out = Value(self.data + other.data, (self, other), "+")',
         "out = Value(self.data + other.data)", "graph cut"),
    _one("mul_records_plus", "Value.__mul__", 'out = Value(self.data * other.data, (self, other), "*")',
         'out = Value(self.data * other.data, (self, other), "+")', "_op = '*'"),
    _one("add_uses_out_data", "Value.__add__", ADD_BWD, ADD_BWD.replace("out.grad", "out.data"), "out.data"),
    _one("tanh_one_minus_t", "Value.tanh", "(1 - t**2)", "(1 - t)", "1 - t"),
    _one("tanh_without_child", "Value.tanh", 'out = Value(t, (self,), "tanh")', 'out = Value(t, (), "tanh")',
         "graph is cut"),
    _one("div_inverted", "Value.__truediv__", DIV_VIA_POW, DIV_VIA_POW.replace("self * other**-1", "other * self**-1"),
         "inverted"),
    _one("add_leftover_raise", "Value.__add__", ADD_TAIL, ADD_TAIL.replace("return out", "raise NotImplementedError()\n        return out"),
         "delete that line"),
    _one("neuron_zero_init", "Neuron", "self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]",
         "self.w = [Value(0.0) for _ in range(nin)]", "random"),
    _one("neuron_graph_cut", "Neuron", "return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).tanh()",
         "return Value(math.tanh(sum((wi * xi for wi, xi in zip(self.w, x)), self.b).data))", "graph is cut"),
    _one("mlp_layers_all_nin", "MLP", "Layer(sizes[i], sizes[i + 1])", "Layer(nin, sizes[i + 1])", "nin inputs"),
    _one("train_ignores_lr", "train", "p.data -= lr * p.grad", "p.data -= 0.1 * p.grad", "lr argument"),
]

BY_NAME = {m.name: m for m in MISTAKES}


@functools.cache
def graded(name: str) -> tuple[CheckResult, ...]:
    """The CLI's results for the reference engine with mistake `name` applied (cached: several tests read them)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.py"
        path.write_text(BY_NAME[name].source())
        return tuple(check_file(str(path)))


def learner_namespace(name: str) -> dict:
    """The buggy engine's definitions, to run repro lines against."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.py"
        path.write_text(BY_NAME[name].source())
        return load(path).namespace
