"""Correct twins of the mistakes each hint names: one correct variant per claimed respect, and how to grade it.

A twin is the reference engine (tests/engines/reference.py) plus the workbook's single-notebook exercises (`BASE`),
edited so that it differs from a mistake a hint names only in the respect the hint claims: the surface the hint
could key on is there (an `=` that still accumulates, a loop over the operands, a list built in another order), the
bug is not. tests/checks/test_hint_evidence.py grades every twin with every check a notebook may name and holds every hint
id of the catalogue against this table: a hint id is covered by a twin, or exempt for a stated reason.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mistakes import REFERENCE, substituted

from autograder.checks import CheckResult, notebook_checks, run_checks
from autograder.loader import load

# The single-notebook exercises as the solutions write them (notebooks 1, 2, 4 and 5), on the reference engine.
EXERCISES = '''

def numerical_derivative(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def relative_error(a, b):
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def _rtruediv(self, other):
    return other * self**-1


Value.__rtruediv__ = _rtruediv


def _relu(self):
    out = Value(max(self.data, 0.0), (self,), "relu")

    def _backward():
        self.grad += (out.data > 0) * out.grad

    out._backward = _backward
    return out


Value.relu = _relu


def tanh_from_bricks(x):
    e2x = (2 * x).exp()
    return (e2x - 1) / (e2x + 1)


def grads_of(f, inputs):
    leaves = [Value(x) for x in inputs]
    f(*leaves).backward()
    return [leaf.grad for leaf in leaves]


a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)
e = a * b
d = e + c
L = d * f
L.grad = 1.0
f.grad = d.data * L.grad
d.grad = f.data * L.grad
c.grad = d.grad
e.grad = d.grad
b.grad = a.data * e.grad
a.grad = b.data * e.grad
'''
BASE = REFERENCE + EXERCISES


@dataclass(frozen=True)
class Twin:
    """A correct variant of BASE: the hint ids it stands against, and the substitutions that make it."""

    ids: tuple[str, ...]
    subs: tuple[tuple[str, str], ...]

    def source(self, name: str = "") -> str:
        """BASE with the twin's substitutions applied (each exactly once)."""
        return substituted(BASE, self.subs, name)


def twin(ids: str, *subs: tuple[str, str]) -> Twin:
    """A Twin from space-separated hint ids and its substitutions."""
    return Twin(tuple(ids.split()), subs)


@functools.cache
def graded(source: str, hidden: bool = False) -> tuple[CheckResult, ...]:
    """Every check a notebook may name, run on the definitions of `source` (loaded as the CLI loads a file)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "twin.py"
        path.write_text(source)
        ns = load(path).namespace
        return tuple(run_checks(notebook_checks(), ns, hidden=hidden))


ADD_BWD = "            self.grad += out.grad\n            other.grad += out.grad\n"
MUL_BWD = "            self.grad += other.data * out.grad\n            other.grad += self.data * out.grad\n"
MUL_HEAD = '        out = Value(self.data * other.data, (self, other), "*")\n'
BUILD_TOPO = ("                visited.add(v)\n                for child in v._prev:\n                    build_topo(child)\n"
              "                topo.append(v)\n")
WALK = "        self.grad = 1.0\n        for node in reversed(topo):\n            node._backward()\n"
NEURON_CALL = "        return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).tanh()\n"
MSE = "    return sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)\n"
STEP = ("        for p in model.parameters():\n            p.grad = 0.0\n        loss.backward()\n"
        "        for p in model.parameters():\n            p.data -= lr * p.grad\n")
MANUAL = ("f.grad = d.data * L.grad\nd.grad = f.data * L.grad\nc.grad = d.grad\ne.grad = d.grad\n"
          "b.grad = a.data * e.grad\na.grad = b.data * e.grad\n")
KAHN = '''    def backward(self):
        users, stack, seen = {}, [self], {id(self)}
        while stack:
            node = stack.pop()
            for child in node._prev:
                users[id(child)] = users.get(id(child), 0) + 1
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append(child)
        self.grad = 1.0
        ready = [self]
        while ready:
            node = ready.pop(0)
            node._backward()
            for child in node._prev:
                users[id(child)] -= 1
                if users[id(child)] == 0:
                    ready.append(child)
'''
ITERATIVE = '''    def backward(self):
        topo, visited, stack = [], set(), [(self, False)]
        while stack:
            v, expanded = stack.pop()
            if expanded:
                topo.append(v)
            elif v not in visited:
                visited.add(v)
                stack.append((v, True))
                stack.extend((child, False) for child in v._prev)
        self.grad = 1.0
        for node in topo[::-1]:
            node._backward()
'''

# name -> the correct twin (each stands against the hint ids it lists)
TWINS: dict[str, Twin] = {
    # --- what a node remembers
    "children_kept_in_a_tuple": twin(
        "add.no_children mul.no_children node.wrong_children exp.graph_cut",
        ("        self._prev = set(_children)\n", "        self._prev = tuple(_children)\n")),
    "ops_named_in_words": twin(
        "add.wrong_op mul.wrong_op node.wrong_op",
        ('(self, other), "+")', '(self, other), "add")'), (MUL_HEAD, MUL_HEAD.replace('"*"', '"mul"')),
        ('out = Value(t, (self,), "tanh")', 'out = Value(t, (self,), "Tanh")')),
    "nodes_made_by_type_of_self": twin(
        "node.returns_operand node.returns_float common.float_for_value",
        (MUL_HEAD, MUL_HEAD.replace("out = Value(", "out = type(self)(")),
        ('out = Value(self.data + other.data, (self, other), "+")',
         'out = type(self)(self.data + other.data, (self, other), "+")')),
    "forward_sums_written_the_other_way_round": twin(
        "add.wrong_forward mul.wrong_forward",
        ('out = Value(self.data + other.data, (self, other), "+")', 'out = Value(other.data + self.data, (self, other), "+")'),
        (MUL_HEAD, MUL_HEAD.replace("self.data * other.data", "other.data * self.data"))),
    "pow_keeps_its_exponent_as_a_child": twin(
        "pow.graph_cut",
        ('out = Value(self.data**k, (self,), f"**{k}")', 'out = Value(self.data**k, (self, Value(k)), f"**{k}")')),
    "tanh_composed_of_exp": twin(
        "tanh.graph_cut tanh.no_backward neuron.missing_tanh",
        ('''    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t**2) * out.grad

        out._backward = _backward
        return out
''', '''    def tanh(self):
        e2x = (self * 2).exp()
        return (e2x - 1) * (e2x + 1) ** -1
''')),
    # --- local rules: the surface of a wrong rule, the right rule
    "grad_assigned_as_a_sum": twin(
        "add.assigns_instead_of_accumulating mul.assigns_instead_of_accumulating node.assigns_instead_of_accumulating "
        "add.wrong_slope",
        ("self.grad += out.grad\n", "self.grad = self.grad + out.grad\n"),
        ("other.grad += self.data * out.grad", "other.grad = other.grad + self.data * out.grad")),
    "add_subtracts_the_negative": twin(
        "add.sign_flipped node.sign_flipped add.forgets_an_operand add.uses_operand_grad node.missing_upstream",
        (ADD_BWD, "            self.grad -= -out.grad\n            other.grad -= -1.0 * out.grad\n")),
    "add_loops_over_both_operands": twin(
        "add.loses_a_use add.assigns_instead_of_accumulating",
        (ADD_BWD, "            for v in (self, other):\n                v.grad += out.grad\n")),
    "mul_loops_over_operand_pairs": twin(
        "mul.loses_a_use mul.forgets_an_operand mul.unswapped mul.uses_grad_for_data",
        (MUL_BWD, "            for v, o in ((self, other), (other, self)):\n                v.grad += o.data * out.grad\n")),
    "mul_subtracts_the_negative": twin(
        "mul.sign_flipped node.sign_flipped",
        (MUL_BWD, "            self.grad -= -other.data * out.grad\n            other.grad -= self.data * -out.grad\n")),
    "mul_factor_order": twin(
        "mul.unswapped mul.uses_grad_for_data mul.wrong_slope",
        ("self.grad += other.data * out.grad", "self.grad += out.grad * other.data")),
    "backward_called_inside_a_lambda": twin(
        "node.backward_is_none common.none_called node.backward_not_attached",
        ("        out._backward = _backward\n        return out\n\n    def __pow__",
         "        out._backward = lambda: _backward()\n        return out\n\n    def __pow__")),
    "tanh_slope_from_out_data": twin(
        "node.uses_out_data tanh.uses_input tanh.drops_one_minus tanh.one_minus_t tanh.one_plus_t_squared tanh.wrong_slope",
        ("(1 - t**2) * out.grad", "(1 - out.data * out.data) * out.grad")),
    "tanh_from_the_input_correctly": twin(
        "tanh.uses_input tanh.wrong_slope",
        ("(1 - t**2) * out.grad", "(1 - math.tanh(self.data) ** 2) * out.grad")),
    "exp_from_the_input_correctly": twin(
        "exp.derivative_is_input exp.wrong_slope",
        ("self.grad += out.data * out.grad", "self.grad += math.exp(self.data) * out.grad")),
    "exp_backward_set_by_a_lambda": twin(
        "exp.no_backward exp.derivative_is_input",
        ('''        def _backward():
            self.grad += out.data * out.grad

        out._backward = _backward
        return out
''', '''        out._backward = lambda: setattr(self, "grad", self.grad + out.data * out.grad)
        return out
''')),
    # the slope through the output, out.data / self.data, guarded where the data is 0 (the power rule there)
    "pow_through_the_output": twin(
        "pow.derivative_keeps_power pow.exponent_off_by_one pow.wrong_slope node.divides_by_data",
        ("k * self.data ** (k - 1) * out.grad",
         "(k * out.data / self.data if self.data else k * 0.0 ** (k - 1)) * out.grad")),
    "pow_backward_set_by_a_lambda": twin(
        "pow.no_backward pow.derivative_keeps_power",
        ('''        def _backward():
            self.grad += k * self.data ** (k - 1) * out.grad

        out._backward = _backward
''', '''        out._backward = lambda: setattr(self, "grad", self.grad + k * self.data ** (k - 1) * out.grad)
''')),
    # relu's slope from the input, in a branch, from micrograd's forward, attached by a lambda: each right
    "relu_slope_from_the_input": twin(
        "relu.uses_out_data relu.slope_at_kink relu.wrong_slope",
        ("(out.data > 0) * out.grad", "(self.data > 0) * out.grad")),
    "relu_passes_the_gradient_in_a_branch": twin(
        "relu.slope_one relu.slope_at_kink",
        ("        self.grad += (out.data > 0) * out.grad\n", "        if out.data > 0:\n            self.grad += out.grad\n")),
    "relu_forward_as_micrograd_writes_it": twin(
        "relu.graph_cut relu.no_backward",
        ('out = Value(max(self.data, 0.0), (self,), "relu")', "out = Value(0 if self.data < 0 else self.data, (self,), 'ReLU')"),
        ("    out._backward = _backward\n    return out\n\n\nValue.relu",
         '    out._backward = lambda: setattr(self, "grad", self.grad + (out.data > 0) * out.grad)\n    return out\n\n\n'
         "Value.relu")),
    # --- the bricks written out as nodes of their own
    "div_as_its_own_node": twin(
        "div.wrong_sign div.operands_inverted div.multiplies div.graph_cut div.no_backward",
        ("    def __truediv__(self, other):\n        return self * other**-1\n", '''    def __truediv__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data / other.data, (self, other), "/")

        def _backward():
            self.grad += out.grad / other.data
            other.grad -= self.data / other.data**2 * out.grad

        out._backward = _backward
        return out
''')),
    "neg_and_sub_as_their_own_nodes": twin(
        "sub.sign_flipped sub.graph_cut sub.no_backward neg.graph_cut neg.no_backward",
        ("    def __neg__(self):\n        return self * -1\n\n    def __sub__(self, other):\n        return self + (-other)\n",
         '''    def __neg__(self):
        out = Value(-self.data, (self,), "neg")

        def _backward():
            self.grad -= out.grad

        out._backward = _backward
        return out

    def __sub__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data - other.data, (self, other), "-")

        def _backward():
            self.grad += out.grad
            other.grad -= out.grad

        out._backward = _backward
        return out
''')),
    "rsub_as_its_own_node": twin(
        "rsub.graph_cut rsub.no_backward sub.sign_flipped",
        ("    def __rsub__(self, other):\n        return other + (-self)\n", '''    def __rsub__(self, other):
        out = Value(other - self.data, (self,), "r-")

        def _backward():
            self.grad -= out.grad

        out._backward = _backward
        return out
''')),
    "rtruediv_as_its_own_node": twin(
        "rtruediv.operands_inverted rtruediv.graph_cut rtruediv.no_backward",
        ("def _rtruediv(self, other):\n    return other * self**-1\n", '''def _rtruediv(self, other):
    out = Value(other / self.data, (self,), "r/")

    def _backward():
        self.grad -= other / self.data**2 * out.grad

    out._backward = _backward
    return out
''')),
    "reflected_ops_bound_to_the_forward_ones": twin(
        "radd.calls_mul rmul.calls_add radd.graph_cut radd.no_backward rmul.graph_cut rmul.no_backward "
        "node.number_on_the_left",
        ("    def __radd__(self, other):\n        return self + other\n\n    def __rmul__(self, other):\n"
         "        return self * other\n", "    __radd__ = __add__\n    __rmul__ = __mul__\n")),
    # the surfaces the error sentences read in the learner's line, in code that raises nothing
    "tanh_children_in_a_list": twin(
        "node.children_not_a_collection",
        ('out = Value(t, (self,), "tanh")', 'out = Value(t, [self], "tanh")')),
    "add_reads_the_other_number_first": twin(
        "node.data_and_value_mixed node.data_is_a_value",
        ('        out = Value(self.data + other.data, (self, other), "+")\n',
         '        other_data = other.data\n        out = Value(self.data + other_data, (self, other), "+")\n')),
    "exp_slope_through_a_name": twin(
        "node.value_added_to_grad node.grad_is_a_value",
        ("            self.grad += out.data * out.grad\n",
         "            slope = out.data\n            self.grad += slope * out.grad\n")),
    "train_records_floats_it_made": twin(
        "train.records_values",
        ("        losses.append(loss.data)\n", "        losses.append(float(loss.data))\n")),
    "bricks_index_a_list_they_made": twin(
        "common.value_iterated",
        ("    e2x = (2 * x).exp()\n", "    e2x = [(2 * x).exp()][0]\n")),
    # a list of weights first made by repetition, then filled with a Value each; parameters() gathered backwards
    "neuron_weights_filled_into_a_repeated_list": twin(
        "neuron.shared_weight",
        ("        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]\n",
         "        self.w = [None] * nin\n        for i in range(nin):\n            self.w[i] = Value(random.uniform(-1, 1))\n")),
    "layer_parameters_gathered_from_the_last_neuron": twin(
        "net.parameters_order",
        ("        return [p for n in self.neurons for p in n.parameters()]\n",
         "        out = []\n        for n in reversed(self.neurons):\n            out = n.parameters() + out\n"
         "        return out\n")),
    "rsub_wraps_the_number_first": twin(
        "reflected.calls_itself_ordered",
        ("    def __rsub__(self, other):\n        return other + (-self)",
         "    def __rsub__(self, other):\n        return Value(other) - self")),
    "radd_wraps_the_number_first": twin(
        "common.endless_recursion reflected.calls_itself",
        ("    def __radd__(self, other):\n        return self + other\n",
         "    def __radd__(self, other):\n        return Value(other) + self\n")),
    "rtruediv_never_needed": twin(
        "rtruediv.number_on_the_left node.number_on_the_left rsub.number_on_the_left",
        ("    def __rsub__(self, other):\n        return other + (-self)",
         "    def __rsub__(self, other):\n        return self * -1 + other")),
    "numbers_wrapped_by_a_helper": twin(
        "node.number_not_wrapped",
        ("        other = other if isinstance(other, Value) else Value(other)\n        out = Value(self.data * other.data",
         "        other = _value(other)\n        out = Value(self.data * other.data"),
        ("class Neuron:", "def _value(x):\n    return x if isinstance(x, Value) else Value(x)\n\n\nclass Neuron:")),
    "pow_refuses_a_value_exponent_unreached": twin(
        "common.leftover_raise",
        ("        assert isinstance(k, (int, float))\n",
         "        if not isinstance(k, (int, float)):\n            raise NotImplementedError('only a number exponent')\n")),
    "method_returns_through_a_name": twin(
        "common.returns_none",
        ("        out._backward = _backward\n        return out\n\n    def exp",
         "        out._backward = _backward\n        result = out\n        return result\n\n    def exp")),
    "repr_in_another_format": twin(
        "repr.default repr.hides_data repr.prints_instead_of_returning",
        ('return f"Value(data={self.data:.4f}, grad={self.grad:.4f})"', 'text = "<Value " + str(round(self.data, 3)) + ">"'
         "\n        return text")),
    # --- backward(): other walks that are right
    "reverse_in_place_on_its_own_line": twin(
        "common.inplace_returns_none common.none_iterated backward.forward_order backward.preorder backward.leaves_first",
        ("        for node in reversed(topo):", "        topo.reverse()\n        for node in topo:")),
    "topo_built_by_inserting_at_the_front": twin(
        "backward.forward_order backward.leaves_first backward.preorder backward.not_topological",
        (BUILD_TOPO, BUILD_TOPO.replace("topo.append(v)", "topo.insert(0, v)")),
        ("        for node in reversed(topo):", "        for node in topo:")),
    "backward_by_counting_users": twin(
        "backward.breadth_first backward.not_topological backward.topological_order backward.loses_a_use "
        "backward.misses_nodes backward.never_calls",
        (REFERENCE[REFERENCE.index("    def backward(self):"):REFERENCE.index("    def __neg__")], KAHN + "\n")),
    "backward_by_an_explicit_stack": twin(
        "backward.preorder backward.runs_a_node_twice backward.ran_twice backward.grad_stayed_zero backward.misses_nodes",
        (REFERENCE[REFERENCE.index("    def backward(self):"):REFERENCE.index("    def __neg__")], ITERATIVE + "\n")),
    "backward_keeps_class_lists_it_empties_each_call": twin(
        "backward.keeps_state",
        ("    def backward(self):\n        topo, visited = [], set()\n",
         "    _topo, _visited = [], set()\n\n    def backward(self):\n        topo, visited = Value._topo, Value._visited\n"
         "        topo.clear()\n        visited.clear()\n")),
    "backward_zeroes_every_grad_first": twin(
        "backward.sets_every_grad backward.root_not_seeded",
        ("        self.grad = 1.0\n        for node in reversed(topo):",
         "        for node in topo:\n            node.grad = 0.0\n        self.grad = 1.0\n        for node in reversed(topo):")),
    "eq_by_value_with_a_walk_keyed_by_id": twin(
        "eq.by_value",
        ("    def __repr__(self):", "    def __eq__(self, other):\n        return isinstance(other, Value) and self.data == "
         "other.data\n\n    def __hash__(self):\n        return hash(self.data)\n\n    def __repr__(self):"),
        ("        self._prev = set(_children)\n", "        self._prev = tuple(_children)\n"),
        ("            if v not in visited:\n                visited.add(v)\n",
         "            if id(v) not in visited:\n                visited.add(id(v))\n")),
    # --- the net
    "neuron_normal_weights_and_zero_bias": twin(
        "neuron.zero_init neuron.same_weights_each_time neuron.init_out_of_range neuron.missing_bias",
        ("self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]", "self.w = [Value(random.gauss(0, 0.5)) for _ in range(nin)]"),
        ("        self.b = Value(random.uniform(-1, 1))\n", "        self.b = Value(0.0)\n")),
    "neuron_bias_first_in_its_sum": twin(
        "neuron.bias_first neuron.missing_bias neuron.graph_cut neuron.wrong_formula",
        (NEURON_CALL, "        act = self.b\n        for wi, xi in zip(self.w, x):\n            act = act + wi * xi\n"
                      "        return act.tanh()\n")),
    "neuron_weights_in_a_tuple": twin(
        "neuron.weight_count net.parameters_incomplete net.parameters_not_values net.parameter_count",
        ("self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]",
         "self.w = tuple(Value(random.uniform(-1, 1)) for _ in range(nin))"),
        ("return self.w + [self.b]", "return [*self.w, self.b]")),
    "neuron_parameters_in_a_dict": twin(
        "neuron.weight_count net.parameters_incomplete",
        ("        self.b = Value(random.uniform(-1, 1))\n",
         "        self.b = Value(random.uniform(-1, 1))\n        self.named = {'b': self.b}\n")),
    "layer_neurons_appended_in_a_loop": twin(
        "layer.neuron_count layer.neuron_inputs layer.shared_neuron",
        ("        self.neurons = [Neuron(nin) for _ in range(nout)]\n",
         "        self.neurons = []\n        while len(self.neurons) < nout:\n            self.neurons.append(Neuron(nin))\n")),
    "layer_single_output_by_unpacking": twin(
        "layer.returns_list_for_one layer.returns_one_output common.value_for_list",
        ("        return outs[0] if len(outs) == 1 else outs\n",
         "        if len(outs) == 1:\n            (only,) = outs\n            return only\n        return outs\n")),
    "mlp_indexes_a_list_it_made": twin(
        "common.value_for_list",
        ("            x = layer(x)\n        return x\n",
         "            x = layer(x)\n            x = x if isinstance(x, list) else [x]\n        return x[0] if len(x) == 1 else x\n")),
    "mlp_built_in_a_loop": twin(
        "mlp.layer_count mlp.layer_sizes mlp.layers_all_take_nin",
        ("        sizes = [nin] + nouts\n        self.layers = [Layer(sizes[i], sizes[i + 1]) for i in range(len(nouts))]",
         "        self.layers = []\n        for nout in nouts:\n            self.layers.append(Layer(nin, nout))\n"
         "            nin = nout")),
    "mlp_chains_through_another_name": twin(
        "mlp.layers_not_chained",
        ("        for layer in self.layers:\n            x = layer(x)\n        return x\n",
         "        out = x\n        for layer in self.layers:\n            out = layer(out)\n        return out\n")),
    "mse_by_a_loop_of_values": twin(
        "mse.graph_cut mse.fixed_count common.float_for_value mse.is_sum mse.square_of_sum",
        (MSE, "    total = 0\n    for x, y in zip(xs, ys):\n        total = total + (model(x) - y) ** 2\n"
              "    return total * (1 / len(xs))\n")),
    "mse_squared_by_a_product": twin(
        "mse.not_squared mse.square_of_sum mse.is_sum mse.wrong_formula",
        (MSE, "    errors = [model(x) - y for x, y in zip(xs, ys)]\n    return sum(err * err for err in errors) / len(errors)\n")),
    "train_zeroes_after_the_update": twin(
        "train.no_zero_grad train.partial_zero_grad",
        (STEP, "        loss.backward()\n        for p in model.parameters():\n            p.data -= lr * p.grad\n"
               "            p.grad = 0.0\n")),
    "train_zeroes_layer_by_layer": twin(
        "train.partial_zero_grad train.no_zero_grad",
        ("        for p in model.parameters():\n            p.grad = 0.0\n",
         "        for layer in model.layers:\n            for neuron in layer.neurons:\n"
         "                for p in neuron.parameters():\n                    p.grad = 0\n")),
    "train_loss_recomputed_at_the_end": twin(
        "train.loss_not_recomputed train.loss_never_changes",
        ("    for _ in range(steps):\n        loss = mse_loss(model, xs, ys)\n",
         "    loss = mse_loss(model, xs, ys)\n    for _ in range(steps):\n"),
        ("            p.data -= lr * p.grad\n", "            p.data -= lr * p.grad\n        loss = mse_loss(model, xs, ys)\n")),
    "train_update_written_out": twin(
        "train.steps_by_data train.step_doubled train.ignores_lr train.ascends train.wrong_formula",
        ("p.data -= lr * p.grad", "p.data = p.data + p.grad * -lr")),
    "train_records_a_value_kept_from_before": twin(
        "train.records_after_update",
        ("        losses.append(loss.data)\n", "        before = loss.data\n"),
        ("    return losses", "        losses.append(before)\n    return losses")),
    "train_counts_its_losses": twin(
        "train.ignores_steps train.steps_off_by_one",
        ("    for _ in range(steps):\n", "    while len(losses) < steps:\n")),
    # --- the single-notebook exercises
    "derivative_halved_after_dividing": twin(
        "derivative.no_half derivative.forward_difference derivative.backward_difference derivative.sign_flipped "
        "derivative.abs derivative.step_too_large derivative.wrong_formula",
        ("    return (f(x + h) - f(x - h)) / (2 * h)\n", "    return 0.5 * (f(x + h) - f(x - h)) / h\n")),
    "relative_error_guarded_first": twin(
        "relerr.zero_over_zero relerr.max_without_abs relerr.divides_by_b relerr.min relerr.no_abs relerr.percent "
        "relerr.sum_scale relerr.mean_scale relerr.floor_one relerr.clipped relerr.wrong_formula",
        ("    scale = max(abs(a), abs(b))\n    return 0.0 if scale == 0 else abs(a - b) / scale\n",
         "    if a == b:\n        return 0.0\n    return abs(b - a) / max(abs(b), abs(a))\n")),
    "manual_grads_in_another_valid_order": twin(
        "manual.root_is_one manual.mul_swaps manual.fill_order manual.add_routes manual.missing_upstream manual.wrong_formula",
        ("L.grad = 1.0\n" + MANUAL, "L.grad = 1\nd.grad = L.grad * f.data\nf.grad = L.grad * d.data\ne.grad = d.grad\n"
                                    "a.grad = e.grad * b.data\nb.grad = e.grad * a.data\nc.grad = 1.0 * d.grad\n")),
    "tanh_from_bricks_by_one_minus_a_fraction": twin(
        "tanh_bricks.uses_tanh tanh_bricks.wrong_formula tanh_bricks.brick_backward tanh_bricks.graph_cut",
        ("    e2x = (2 * x).exp()\n    return (e2x - 1) / (e2x + 1)\n", "    return 1 - 2 / ((x * 2).exp() + 1)\n")),
    "grads_of_in_steps": twin(
        "grads_of.returns_data grads_of.backward_twice grads_of.not_fresh grads_of.no_backward grads_of.passes_a_list "
        "grads_of.returns_values common.argument_count common.backward_on_number",
        ("    leaves = [Value(x) for x in inputs]\n    f(*leaves).backward()\n    return [leaf.grad for leaf in leaves]\n",
         "    leaves = list(map(Value, inputs))\n    out = f(*leaves)\n    out.backward()\n    grads = []\n"
         "    for leaf in leaves:\n        grads.append(leaf.grad)\n    return grads\n")),
    # leaves kept in a dict keyed by position (not by number), gradients gathered backwards and turned round
    "grads_of_by_position_in_a_dict": twin(
        "grads_of.leaves_by_value grads_of.wrong_order grads_of.wrong_count",
        ("    leaves = [Value(x) for x in inputs]\n    f(*leaves).backward()\n    return [leaf.grad for leaf in leaves]\n",
         "    leaves = {i: Value(x) for i, x in enumerate(inputs)}\n    f(*leaves.values()).backward()\n"
         "    grads = [leaves[i].grad for i in reversed(range(len(inputs)))]\n    return grads[::-1]\n")),
}

# Hint ids with no correct twin, and why: each reason names the test that holds the sentence to its evidence instead.
ERROR_RELAY = ("relays an error of learner code whose text is the evidence: test_an_error_sentence_fires_on_its_error_"
               "and_not_on_a_near_miss holds it against the same kind of error from another cause")
EXEMPT: dict[str, str] = {
    "api.missing_attribute": ("a Value without an attribute of the fixed API is not correct, so it has no correct twin; "
                              + ERROR_RELAY),
    "common.raised": "says only that learner code raised (the error and its line are shown): no claim about the code",
    "common.unexpected_result": "says only that learner code handed back something of another kind (it is described)",
    "common.timeout": "says only that the code did not finish within the time limit, which the grader measured",
    "common.malformed_observation": "says only that the observations have a shape no honest probe makes (batch grading)",
    "common.graders_code": ("says only that the method's code lies in the grader's own files, which it names (no learner's "
                            "method does: test_graders_code holds every engine of the corpus to it)"),
}
# A failure no known mistake explains gets its check's fallback id: the sentence repeats what the check tests and
# claims nothing about the code (messages.fallback_sentence), so it has no respect a twin could differ in.
FALLBACK = "says only what the check tests, claiming nothing about the code (messages.fallback_sentence)"
