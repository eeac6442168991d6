"""Every sentence a learner reads in a diagnosis: the misconception catalogue and the phrasing.

A misconception has a stable id (`method.what_went_wrong`, used in CheckResults, the gradebook's class report
and tests) and one sentence a beginner understands. `{name}` in a sentence is the variable the numbers point at.
The sentences of an operation's own mistakes are in its declaration (ops.py) and join the catalogue here; a check's
fallback (a failure no known mistake explains) is phrased from its description (`fallback_sentence`), and the
catalogue with every check's fallback is `autograder.checks.MISCONCEPTIONS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from . import ops

# ---------------------------------------------------------------- hint levels
# The part of a sentence that writes the solution (the correct expression or code) is marked ⟦like this⟧ in the
# templates below; it is shown only at the level "solution" (settings.Hints.level), and left out otherwise, so that
# the sentence still names the misconception and shows what the learner's code computed.
LEVELS = ("misconception", "solution")
SOLUTION_OPEN, SOLUTION_CLOSE = "⟦", "⟧"
_SOLUTION = re.compile("⟦[^⟦⟧]*⟧")
_LEVEL: ContextVar[str] = ContextVar("autograder_hint_level", default=LEVELS[0])


@contextmanager
def hint_level(level: str) -> Iterator[None]:
    """Within the block, diagnoses are phrased at `level` (one of LEVELS)."""
    if level not in LEVELS:
        raise ValueError(f"unknown hint level {level!r}; known: {', '.join(LEVELS)}")
    token = _LEVEL.set(level)
    try:
        yield
    finally:
        _LEVEL.reset(token)


def current_level() -> str:
    """The hint level diagnoses are phrased at here."""
    return _LEVEL.get()


def at_level(template: str, level: str | None = None) -> str:
    """A template as shown at `level` (default: the current one): its solution parts kept (unmarked) or left out."""
    if (level or _LEVEL.get()) == "solution":
        return template.replace(SOLUTION_OPEN, "").replace(SOLUTION_CLOSE, "")
    return _SOLUTION.sub("", template)


def solution_parts(template: str) -> list[str]:
    """The marked solution parts of a template."""
    return [m[1:-1] for m in _SOLUTION.findall(template)]


# Observations of a shape no honest probe returns (in batch grading, the grader treats them as a protocol violation).
MALFORMED_OBSERVATION = "common.malformed_observation"
# A target whose code is the grader's own (probes/provenance.py): it fails its check, and graded runs flag it.
GRADERS_CODE = "common.graders_code"

MISCONCEPTIONS: dict[str, str] = {
    **ops.SENTENCES,  # each operation's own mistakes
    # structure: what a node remembers
    "node.wrong_children": "_prev must hold exactly the operands of the operation, the very same Value objects",
    "node.wrong_op": "each result must record the operation it came from in _op⟦ (such as '+', '*', 'tanh', 'exp', '**2')⟧",
    "node.returns_operand": "an operation must return a NEW Value, not one of its operands",
    # local rules (one out._backward() call)
    "node.assigns_instead_of_accumulating": ("a _backward sets `grad = ...` where it must accumulate `grad += ...` (a node "
                                             "used twice gets a gradient from each use)"),
    "node.backward_not_attached": ("out._backward did nothing: the function was never attached to the result⟦ (define "
                                   "_backward inside the method and assign out._backward = _backward)⟧"),
    "node.missing_upstream": "off by the upstream factor: a _backward is missing `* out.grad` (the chain rule)",
    "node.uses_out_data": ("the _backward multiplies by out.data (the result's value) where the chain rule needs "
                           "out.grad (the gradient flowing in)"),
    # backward()
    "backward.root_not_seeded": "backward() must seed the root (d out / d out is 1) before walking the graph⟦: self.grad = 1⟧",
    "backward.never_calls": ("backward() called no node's _backward: build the topological order from the root through "
                             "_prev and call every node's _backward"),
    "backward.forward_order": ("backward() called the leaves' side first: walk the nodes in REVERSE topological order "
                               "(from the root down), so a node's gradient is complete before it is passed on"),
    "backward.loses_a_use": ("a node used more than once got the gradient of only some of its uses, though each "
                             "operation's _backward accumulates when tested alone: backward() must run the _backward "
                             "of every node that uses it, once each"),
    "backward.leaves_first": ("backward() ran every child's _backward before the nodes that use it (leaves first): "
                              "the walk must go from the root down, the reverse of a list where each node comes after "
                              "its children (post-order: append a node after visiting its children)"),
    "backward.sets_every_grad": ("backward() sets each node's grad itself (to 1 or 0) in the loop, overwriting what "
                                 "the nodes that use it passed on: seed only the root⟦, self.grad = 1,⟧ before the loop"),
    "backward.preorder": ("the walk is the reverse of a PRE-order list: build_topo appends a node before visiting its "
                          "children; append it AFTER the loop over its children (post-order), then walk the list "
                          "reversed"),
    "backward.breadth_first": ("a breadth-first walk reaches a node before every node that uses it has passed its "
                               "gradient on: use a topological sort and walk it in reverse"),
    "backward.not_topological": ("a node's _backward ran before every node that uses it had run: backward() must walk "
                                 "the nodes in reverse topological order (built with a visited set)"),
    "backward.runs_a_node_twice": ("backward() ran some node's _backward more than once: the topological sort needs a "
                                   "visited set, and backward() must walk the sorted list once; paths that meet again "
                                   "must not be walked again"),
    "backward.misses_nodes": ("backward() never called the _backward of some nodes: build the topological order from the "
                              "root through _prev and call every node's _backward; if Value defines __eq__/__hash__ by "
                              "value, nodes with equal data (y * 0.5 twice) are merged into one"),
    "backward.grad_stayed_zero": ("{name}.grad stayed 0: is the root seeded (out.grad = 1) inside backward()? is each "
                                  "op's _backward assigned to its result⟦ (out._backward = _backward)⟧? are nodes visited "
                                  "in REVERSE topological order?"),
    "backward.ran_twice": ("{name}.grad is too large by a whole factor: some _backward ran more than once; does backward() "
                           "keep a visited set and zero nothing it should not?"),
    "backward.topological_order": ("a node here reaches out through several paths: backward() must call each node's "
                                   "_backward exactly once, and only after every node that uses it (reverse topological "
                                   "order, built with a visited set); recursion without a topological sort, or a "
                                   "breadth-first walk, breaks this"),
    "backward.keeps_state": ("backward() keeps something from one call to the next (a topological list or visited "
                             "set that outlives the call: kept on the class, in a default argument such as topo=[], "
                             "in a global, or as a mark left on the nodes), so a later graph runs nodes of an earlier "
                             "one again or skips nodes it holds: make them afresh inside each backward() call"),
    "eq.by_value": ("two distinct nodes have equal data here: if Value defines __eq__/__hash__ by value, the visited set "
                    "(or a dict) merges them; leave __eq__ and __hash__ as identity⟦, or key the visited set by id(node)⟧"),
    "repr.default": "define __repr__ to show the data, such as Value(data=2.0)",
    "repr.hides_data": "the repr must show the data, such as Value(data=2.0)",
    # the net
    "neuron.zero_init": ("every starting weight is the same number (zero?): a net whose neurons all start alike can never "
                         "learn different features; draw each weight at random⟦, e.g. random.uniform(-1, 1)⟧"),
    "neuron.same_weights_each_time": ("every new Neuron starts with the same weights: draw them at random when the "
                                      "Neuron is made⟦ (random.uniform(-1, 1))⟧, not fixed numbers"),
    "neuron.init_out_of_range": ("some starting weight is far outside -1 .. 1: tanh saturates there and learning stalls; "
                                 "draw weights from a small range⟦ such as random.uniform(-1, 1)⟧"),
    "neuron.graph_cut": ("the output is a new Value built from a plain number (such as Value(math.tanh(act.data))): the "
                         "graph is cut there, so no gradient can reach the weights⟦; use the Value's own .tanh()⟧"),
    "neuron.missing_bias": "the neuron's output is tanh(w.x + b): the bias b is left out of the sum",
    "neuron.missing_tanh": "the neuron's output must be tanh(w.x + b); the tanh is missing",
    "neuron.shared_weight": ("the neuron's weights are one Value object listed several times (a list made with "
                             "`[Value(...)] * nin` repeats one object), so they can never differ: each weight must "
                             "be a Value of its own"),
    "net.parameters_order": ("parameters() lists the right Values in another order than the spec's, so every weight "
                             "set through it lands in another place: list each neuron's weights, then its bias, neuron "
                             "by neuron, layer by layer"),
    "neuron.bias_first": "parameters() lists each neuron's bias before its weights; the spec is weights then bias",
    "layer.returns_list_for_one": "Layer(nin, 1)(x) should return the one output Value itself, not a list",
    "mlp.layers_all_take_nin": ("every layer takes nin inputs; layer i must take as many inputs as the layer before it "
                                "has outputs⟦: sizes = [nin] + nouts, Layer(sizes[i], sizes[i + 1])⟧"),
    "net.parameters_not_values": ("parameters() must return the Values themselves, in one flat list: a Layer lists "
                                  "each neuron's own parameters()⟦, [p for n in self.neurons for p in n.parameters()]⟧"),
    "net.parameters_incomplete": ("__init__ makes every Value, but parameters() leaves some out: return every weight "
                                  "and bias, layer by layer, neuron by neuron (weights then bias)"),
    "neuron.weight_count": ("Neuron(nin) needs one weight per input and one bias⟦: "
                            "self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]⟧"),
    "layer.neuron_count": "Layer(nin, nout) makes nout neurons⟦: [Neuron(nin) for _ in range(nout)]⟧",
    "layer.neuron_inputs": "each neuron of Layer(nin, nout) sees all nin inputs⟦: make them Neuron(nin)⟧",
    "mlp.layer_count": ("MLP(nin, nouts) makes one Layer per entry of nouts⟦: sizes = [nin] + nouts, "
                        "[Layer(sizes[i], sizes[i + 1]) for i in range(len(nouts))]⟧"),
    "mlp.layer_sizes": ("layer i of MLP(nin, nouts) takes as many inputs as the layer before has outputs, and has "
                        "nouts[i] outputs⟦: Layer(sizes[i], sizes[i + 1]) with sizes = [nin] + nouts⟧"),
    "net.parameter_count": "parameters() must list every weight and bias, layer by layer, neuron by neuron",
    "mse.is_sum": "this is the sum of squared errors; the mean divides by the number of examples",
    "train.no_zero_grad": "gradients are never zeroed between steps, so they pile up⟦: set every p.grad = 0 before backward()⟧",
    "train.ascends": "the parameters move up the gradient⟦: the update is p.data -= lr * p.grad⟧",
    "train.records_after_update": "each recorded loss is the loss after that step's update⟦: record loss.data before updating⟧",
    "train.ignores_lr": "train moves the parameters by a fixed step size: use the lr argument it is given",
    "train.loss_never_changes": ("every recorded loss is the same and the parameters never moved⟦: each step must call "
                                 "loss.backward() and then move every p.data by -lr * p.grad⟧"),
    "train.loss_not_recomputed": ("the parameters move, but every recorded loss is the same number: compute the loss "
                                  "afresh inside the loop⟦, loss = mse_loss(model, xs, ys),⟧ at every step"),
    "train.steps_by_data": ("each step moves p.data by lr * p.data, not by the gradient⟦: the update is "
                            "p.data -= lr * p.grad⟧"),
    "train.step_doubled": ("every step moves the parameters twice as far as one gradient step of size lr: "
                           "loss.backward() runs twice a step (the gradients add up), or the update is applied twice"),
    # single-notebook exercises
    "derivative.no_half": ("your slope is twice the true one: the difference of f at the two points must be divided "
                           "by the distance between the two points"),
    "manual.root_is_one": "dL/dL is 1⟦: start with L.grad = 1⟧",
    "manual.mul_swaps": ("for a product, each factor's gradient is the OTHER factor's data times the gradient flowing "
                         "in⟦ (L = d * f: d.grad = f.data * L.grad)⟧"),
    "manual.fill_order": ("the grad named above is still 0 at the end, though the grad it is made from is filled "
                          "in: its line is missing, or it ran while the grad it reads was still 0; fill the grads in "
                          "from L down, each node's after its parent's"),
    "manual.add_routes": "a sum routes the gradient flowing in unchanged to both terms⟦ (d = e + c: c.grad = d.grad)⟧",
    "tanh_bricks.uses_tanh": "build tanh from the bricks (exp, +, -, /), not with x.tanh()",
    "tanh_bricks.wrong_formula": "the value is not tanh(x): check the formula⟦, tanh(x) = (e**(2x) - 1) / (e**(2x) + 1)⟧",
    "tanh_bricks.brick_backward": ("the forward value is right but the gradient is not: a brick's backward is wrong (its "
                                   "own check says which), or part of your composition is built from plain numbers "
                                   "(Value(... .data)), which cuts the graph there"),
    "grads_of.returns_data": "grads_of must return each leaf's .grad after backward(), not its .data",
    "grads_of.backward_twice": ("every gradient is a whole multiple of the right one: backward() ran more than once "
                                "on the same graph, and each run adds its gradients again; call it once"),
    "grads_of.leaves_by_value": ("two equal inputs shared one leaf, so each got the gradient of both: make a Value "
                                 "of its own for every input, even for equal numbers (leaves kept in a dict or set "
                                 "keyed by the number merge them)"),
    "grads_of.wrong_order": ("these are the right gradients in another order: grads_of must return df/dx for each "
                             "input in the order of the inputs"),
    "grads_of.wrong_count": "grads_of must return one gradient for each input, no more and no fewer",
    "grads_of.not_fresh": "start from fresh Values on every call: gradients left from an earlier call pile up",
    "derivative.forward_difference": ("this looks like a forward difference (f(x+h) - f(x)) / h, off by about h*f''(x)/2⟦; "
                                      "the central difference (f(x+h) - f(x-h)) / (2h) is far closer⟧"),
    "derivative.backward_difference": ("this looks like a backward difference (f(x) - f(x-h)) / h, off by about "
                                       "h*f''(x)/2⟦; the central difference (f(x+h) - f(x-h)) / (2h) is far closer⟧"),
    "relerr.zero_over_zero": "two zeros agree perfectly; avoid dividing 0 by 0",
    "relerr.max_without_abs": ("max(a, b) of two negative numbers is negative (or smaller than the larger magnitude): "
                               "the scale must be the larger magnitude⟦, max(abs(a), abs(b))⟧"),
    "relerr.divides_by_b": ("the error must be relative to the LARGER of |a| and |b|, so that swapping a and b gives the "
                            "same answer and b = 0 works⟦: divide by max(abs(a), abs(b))⟧"),
    "relerr.min": "divide by the larger magnitude⟦, max(abs(a), abs(b))⟧, not the smaller",
    "relerr.no_abs": "the error is a distance⟦: take abs(a - b)⟧",
    "node.sign_flipped": "the gradient was subtracted: a _backward must ADD its contribution, `grad += ...`",
    # structure, when learner code raised
    "node.divides_by_data": ("the line above divides by a .data that is exactly 0 in this case (0 is a valid "
                             "input, where the operation has a slope): a slope written as a quotient such as "
                             "out.data / self.data is right only where the data is not 0; write the local derivative "
                             "without dividing by an operand's data"),
    "node.returns_float": ("an operation must return a new Value, Value(result, (self, other), op), not a plain number: "
                           "the graph needs Values to walk back through"),
    "node.number_on_the_left": ("a number on the LEFT of a Value (such as -1 * self, or -other + self when other is a "
                                "number) needs __rmul__ / __radd__, which come in the exercise 'numbers on the left'; "
                                "until then keep the Value on the left⟦: self * -1, self + (-other)⟧"),
    "mse.fixed_count": ("the mean divides by the number of examples⟦, len(xs)⟧; this divides the sum by another count "
                        "(the line above says which)"),
    "mse.graph_cut": ("the loss's value is right, but its graph does not reach the parameters: part of it is built "
                      "from plain numbers (.data, or Value(... .data)); build it from the model's output Values"),
    "common.float_for_value": ("it returned a plain number where a Value belongs: build the result from Value "
                               "operations (no .data), so that backward() can walk back through it"),
    "common.value_iterated": ("a single Value was indexed or looped over (the line above) where a list or tuple "
                              "belongs"),
    "node.children_not_a_collection": ("a node's children arrived as one Value where a tuple of Values belongs, so "
                                       "walking them fails (the line above): parentheses alone make no tuple, "
                                       "`(self)` is self itself"),
    "node.data_and_value_mixed": ("the line above combines a number (a .data) with a Value (an operand written "
                                  "without .data), so Python asks the Value to handle a number on its left: the "
                                  "forward value is computed from the numbers of both operands"),
    "node.value_added_to_grad": ("the line above adds a Value to a .grad, which holds a plain number: a _backward "
                                 "computes with numbers (the nodes' .data and .grad), never with the Value objects "
                                 "themselves"),
    "node.data_is_a_value": ("this .data holds a Value where a plain number belongs: the forward value was computed "
                             "with a Value object itself (an operand written without .data) rather than with the "
                             "operands' numbers"),
    "node.grad_is_a_value": ("this .grad holds a Value where a plain number belongs: a _backward added a Value object "
                             "itself (a node written without .data or .grad) to a gradient, which must stay a number"),
    "train.records_values": ("each recorded loss must be a plain number: the list holds the loss Values themselves "
                             "(each keeping its whole graph alive), not their .data"),
    "common.value_for_list": ("a single Value was indexed or looped over where a list belongs: Layer(nin, 1)(x) "
                              "returns the one Value itself, so code that handles any layer must not assume a list"),
    "grads_of.returns_values": "grads_of must return numbers, each leaf's .grad, not the leaf Values themselves",
    "common.none_iterated": ("the line above walks through None where a list belongs: a function without `return`, "
                             "or a list method that works in place (x = x.reverse(), x = x.sort()), gives None"),
    "repr.prints_instead_of_returning": ("__repr__ returned None: it must RETURN the text⟦, "
                                         "return f\"Value(data={self.data})\"⟧ (printing it, or leaving out `return`, "
                                         "gives None)"),
    "layer.returns_one_output": ("Layer(nin, nout)(x) must return the list of all nout outputs (one per neuron), and "
                                 "only with nout == 1 the one Value itself"),
    "layer.shared_neuron": ("every output of the layer is the same: the layer holds one Neuron nout times "
                            "([Neuron(nin)] * nout)⟦; make a new one each time: [Neuron(nin) for _ in range(nout)]⟧"),
    "mlp.layers_not_chained": ("each layer must take the previous layer's output⟦: `x = layer(x)` in the loop, then "
                               "return x⟧; this feeds every layer the original input"),
    "mse.not_squared": "each error must be squared⟦, (model(x) - y) ** 2,⟧ before summing: positive and negative errors cancel",
    "mse.square_of_sum": ("square each error, then sum⟦: sum((model(x) - y) ** 2 ...)⟧; this squares the sum of the "
                          "errors, where positive and negative errors cancel"),
    "train.ignores_steps": ("train must take exactly `steps` steps and record one loss per step⟦: "
                            "for _ in range(steps)⟧, with the steps argument it is given"),
    "train.steps_off_by_one": ("train recorded one loss too many or too few: take exactly `steps` steps⟦, "
                               "for _ in range(steps)⟧, recording one loss each"),
    "train.partial_zero_grad": ("the first step is right but the later ones drift: some parameters' gradients are "
                                "never zeroed, so they pile up⟦; before backward(), set p.grad = 0 for EVERY p in "
                                "model.parameters()⟧"),
    "derivative.sign_flipped": "the slope has the wrong sign⟦: it is (f(x + h) - f(x - h)) / (2h), the later point first⟧",
    "derivative.abs": "the slope can be negative: do not take abs() of the difference",
    "derivative.step_too_large": ("close, but not close enough: a central difference with a large step; use the small "
                                  "h you are given (the default h)"),
    "relerr.percent": "the relative error is a fraction, not a percentage: do not multiply by 100",
    "relerr.sum_scale": "divide by the larger magnitude⟦, max(abs(a), abs(b))⟧, not by their sum",
    "relerr.mean_scale": "divide by the larger magnitude⟦, max(abs(a), abs(b))⟧, not by their mean",
    "relerr.floor_one": ("divide by the larger magnitude alone⟦, max(abs(a), abs(b))⟧: a floor of 1 turns the error "
                         "into an absolute one for small numbers"),
    "relerr.clipped": "do not clip the error at 1: two numbers of opposite sign are 2 apart, relative to the larger",
    "manual.missing_upstream": ("each gradient is the local derivative TIMES the gradient flowing in from above "
                                "(the chain rule)⟦: e = a * b gives a.grad = b.data * e.grad, not b.data alone⟧"),
    "tanh_bricks.graph_cut": ("x.grad stayed 0 though every brick passes its own check: your composition cuts the "
                              "graph, a brick built from plain numbers (such as Value(math.exp(2 * x.data))); build "
                              "it with Value operations⟦, such as (2 * x).exp()⟧"),
    "grads_of.no_backward": ("the leaves' grads stayed 0: call f on the very leaf Values you read, then .backward() on "
                             "its output, before reading each leaf's .grad"),
    # how a failure can have no diagnosis of its own
    "api.missing_attribute": ("a Value must have every attribute of the fixed API, data, grad, _prev, _op and "
                              "_backward (set in __init__); the error above names the one missing"),
    "node.backward_is_none": ("a node's _backward is None: `out._backward = _backward()` CALLS the function and stores "
                              "what it returns (None); store the function itself⟦, out._backward = _backward⟧"),
    "common.inplace_returns_none": ("list.reverse(), sort(), append() and extend() change the list in place and "
                                    "return None, and the line above uses that None: call them on a line of their "
                                    "own⟦, or use reversed(topo) / sorted(...)⟧"),
    "common.none_called": ("the line above calls something that is None: a name meant to hold a function holds None "
                           "(assigned the result of a call, `= f()`, where the function itself, `= f`, belongs)"),
    "grads_of.passes_a_list": ("f takes its inputs as separate arguments, f(a, b); this passes the list, f(leaves)⟦: "
                               "call it f(*leaves)⟧"),
    "common.argument_count": ("a function got another number of arguments than it takes (see the error): a list "
                              "passed where separate arguments belong needs a star, f(*items)"),
    "common.backward_on_number": (".backward() was called on a plain number: call it on the output Value itself "
                                  "(built from Value leaves), never on .data or on a function's float result"),
    "node.number_not_wrapped": ("a plain number reached a Value method where a Value belongs (such as a - 1.5): wrap "
                                "it first⟦, other = other if isinstance(other, Value) else Value(other)⟧"),
    "common.returns_none": ("it returned None: the `return` line is missing (or returns what an in-place method such "
                            "as list.sort() gives, None)"),
    "rtruediv.number_on_the_left": ("a number on the LEFT of / (such as 2 / x) calls x.__rtruediv__(2), which comes in "
                                    "the exercise 'number / Value'⟦; until then write x**-1 * 2⟧"),
    "rsub.number_on_the_left": ("a number on the LEFT of - (such as 1 - x) calls x.__rsub__(1): define __rsub__ "
                                "⟦(other + (-self)), ⟧or write -x + 1"),
    "common.unexpected_result": ("your code ran without an error but gave back something of another kind than the "
                                 "check expects (described above)"),
    # a wrong formula recovered from the numbers (the diagnosis shows it beside the right one)
    "derivative.wrong_formula": ("numerical_derivative computes a slip of the central difference: the diagnosis shows "
                                 "the formula that gives your numbers⟦ beside the right one⟧"),
    "relerr.wrong_formula": ("relative_error computes a slip of the relative error: the diagnosis shows the formula "
                             "that gives your numbers⟦ beside the right one⟧"),
    **{f"{kind}.wrong_formula": (f"{what} computes a slip of the right formula: the diagnosis shows the formula that "
                                 "gives your numbers⟦ beside the right one⟧")
       for kind, what in (("neuron", "Neuron(x)"), ("mse", "mse_loss"), ("train", "the update in train"),
                          ("manual", "a hand-filled grad"))},
    "common.raised": ("your code raised an error while the check ran: the error and the line it names are above; run "
                      "the reproduce lines to see it yourself"),
    "common.timeout": "your code did not finish in time: look for a loop that never ends",
    "common.endless_recursion": ("a method calls itself without end, directly or through the others in the cycle "
                                 "named above: one of them must compute its result from operations that do not lead "
                                 "back into the cycle"),
    "reflected.calls_itself": ("a number on the left of + or * calls the Value's reflected method (2 + a calls "
                               "a.__radd__(2)); inside it, `other + self` or `other * self` puts the number on the left "
                               "again, which calls the same method again, without end: inside it, the Value must "
                               "come first (+ and * give the same result either way round)"),
    "reflected.calls_itself_ordered": ("a number on the left of - or / calls the Value's reflected method (2 - a calls "
                                       "a.__rsub__(2)); inside it, `other - self` or `other / self` puts the number on "
                                       "the left again, which calls the same method again, without end; and - and / "
                                       "change their result when turned round, so `self - other` is not the answer "
                                       "either: build the result from operations with a Value on the left"),
    GRADERS_CODE: ("the method checked is the grader's own operation (or calls it), not code of yours: the check "
                   "cannot give points for it; write the method from the lesson"),
    "common.leftover_raise": ("your code is there, but the stub's `raise NotImplementedError()` line below it is still "
                              "there and stops it: delete that line"),
    MALFORMED_OBSERVATION: (
        "the numbers came back in a shape the grader's own probe never produces: learner code interfered with the check"),
}


# What the probe side saw go wrong, by the key it reports (it may not import this module: it holds answers); each is
# phrased from the facts (`fields`) the probe sends with it. `at` is ` in <the learner function that raised>` or ''.
PROBE_ERRORS: dict[str, str] = {
    # the target is not the learner's code
    "graders_code": ("{target} is the grader's own code ({file}), installed or called in place of yours: the check "
                     "judges your method, so write it yourself"),
    # learner code raised
    "raised": "{exception}{at}",
    "raised_base": "learner code raised {exception}{at}",
    "not_implemented": "NotImplementedError raised{at}",
    "recursion": "RecursionError{at}: {cycle}, without end",  # cycle: named by cycle_text, from the probe's names
    "exit": "learner code called sys.exit(){at}",
    "timeout": "did not finish within {seconds} s (an infinite loop?)",
    # it ran, but handed back something the probe cannot read
    "number_lies": "{what} is a {kind} that {how}; the grader reads only plain numbers",
    "number_is_bool": "{what} is a bool ({shown}), expected a number",
    "number_unreadable": "{what} could not be read as a number: {error}",
    "not_a_number": "{what} is a {kind} ({shown}), expected a number",
    "number_not_float": "{what} did not convert to a plain float",
    "expression_not_a_value": "`{line}` gave a {kind} ({shown}), not a Value: does every operator return a new Value?",
    "node_not_a_value": "the {op} gave a {kind} ({shown}), not a Value",
    "backward_is_none": "out._backward is None: the method stored what calling _backward returned",
    "backward_not_assignable": "could not set a node's _backward ({error}): _backward should be an assignable attribute",
    "backward_not_wrappable": ("could not wrap a node's _backward to count calls ({error}): _backward should be an "
                               "assignable attribute"),
    "repr_not_str": "repr() did not return a str",
    "missing_attribute": ("your Value has no `{attr}`: the fixed API gives every Value `data`, `grad`, `_prev`, `_op` "
                          "and `_backward` (set them in __init__)"),
    "child_not_a_value": "a child in some node's _prev is a {kind} ({shown}), not a Value: _children must hold the operand Values",
    "prev_not_walkable": "_prev is a {kind}, which cannot be walked: store the children in a set, tuple or list",
    "prev_one_shot": "_prev is a {kind}, an iterator that can be walked only once: store the children in a set, tuple or list",
    "prev_too_many": "a node's _prev holds more than {limit} children: does _prev hold only the operands?",
    "graph_too_big": "the graph has more than {limit} nodes: does _prev hold only the operands?",
    "one_output_in_a_list": "{what} returned a {kind} of {n}; with one output neuron it should return the Value itself",
    "output_not_a_value": "{what} returned a {kind} ({shown}), expected a Value",
    "layer_not_a_list": "Layer({nin}, {nout})(x) returned {shown}, expected a list of {nout} Values",
    "train_not_a_list": "train returned a {kind}, expected a list of losses",
    "manual_node_missing": "{name} is not defined as a Value: run the cell that builds L = (a*b + c) * f first",
    "bricks_not_a_value": "tanh_from_bricks(Value({x})) gave a {kind} ({shown}), not a Value",
    "grads_of_not_a_list": "grads_of returned a {kind} ({shown}), expected a list of numbers",
}


def probe_error(reported: dict) -> str:
    """The sentence for an error the probe side reported as {"error": key, "fields": {...}}; KeyError or TypeError
    for a key or facts no honest probe sends."""
    fields = reported.get("fields") or {}
    if not isinstance(fields, dict) or not all(isinstance(v, str) for v in fields.values()):
        raise TypeError("the facts of an error are not plain strings")
    if reported["error"] == "recursion":
        names = fields["cycle"].split(" > ") if fields.get("cycle") else []
        fields = {**fields, "cycle": cycle_text(names) if names else
                  "the graph is only a few hundred nodes deep, so a method calls itself"}
    return PROBE_ERRORS[reported["error"]].format_map(fields)


def cycle_text(names: Sequence[str]) -> str:
    """`__rsub__ calls itself` or `__neg__ calls __rsub__, which calls __neg__ again`."""
    names = [n.rsplit(".", 1)[-1] if ".<locals>." not in n else n for n in names]
    if len(names) == 1:
        return f"{names[0]} calls itself"
    steps = ", which calls ".join(names[1:])
    return f"{names[0]} calls {steps}, which calls {names[0]} again"


# Errors of learner code recognised from their text and, where given, the text of the learner's line that raised:
# (error pattern, line pattern or None, misconception); the first match wins. Each sentence claims only what the
# error and the line show.
ERROR_MISCONCEPTIONS: tuple[tuple[str, str | None, str], ...] = (
    (r"did not finish within", None, "common.timeout"),
    (r"^ZeroDivisionError", r"/\s*\(?\s*[\w.]*\.data\b", "node.divides_by_data"),
    (r"^RecursionError in (?:\w+\.)?__r(add|mul)__: __r\1__ calls itself", r"\bother\s*[+*]\s*self\b",
     "reflected.calls_itself"),
    (r"^RecursionError in (?:\w+\.)?__r(sub|truediv)__: __r\1__ calls itself", r"\bother\s*[-/]\s*self\b",
     "reflected.calls_itself_ordered"),
    (r"^RecursionError", None, "common.endless_recursion"),
    (r"__repr__ returned non-string \(type NoneType\)", None, "repr.prints_instead_of_returning"),
    (r"'Value' object has no attribute '(data|grad|_prev|_op|_backward)'", None, "api.missing_attribute"),
    (r"your Value has no `\w+`", None, "api.missing_attribute"),
    (r"'NoneType' object is not callable", r"_backward\s*\(\s*\)", "node.backward_is_none"),
    (r"out\._backward is None", None, "node.backward_is_none"),
    (r"'NoneType' object is not (iterable|subscriptable|reversible)|'NoneType' object has no attribute",
     r"(=|\bin|reversed\(|sorted\(|list\()\s*[\w.\[\]]+\.(reverse|sort|append|extend|insert)\(",
     "common.inplace_returns_none"),
    (r"'NoneType' object is not callable", None, "common.none_called"),
    (r"^TypeError: _f\(\) (missing \d+ required positional|takes \d+ positional)", None, "grads_of.passes_a_list"),
    (r"(missing \d+ required positional argument|takes \d+ positional arguments? but \d+ (was|were) given)", None,
     "common.argument_count"),
    (r"'(float|int)' object has no attribute 'backward'", None, "common.backward_on_number"),
    (r"'(float|int)' object has no attribute '(data|grad|_prev|_backward)'", None, "node.number_not_wrapped"),
    (r"(gave|returned) a NoneType", None, "common.returns_none"),
    (r"'Value' object is not iterable", r"\b_children\b|\b_prev\b", "node.children_not_a_collection"),
    (r"'Value' object is not (subscriptable|iterable) in (\w+\.)?(Neuron|Layer|MLP|mse_loss|train)\b", None,
     "common.value_for_list"),
    (r"'Value' object is not (subscriptable|iterable)", None, "common.value_iterated"),
    (r"grads_of\(\.\.\.\)\[\d+\] is a Value\b", None, "grads_of.returns_values"),
    (r"'NoneType' object is not (iterable|reversible)", None, "common.none_iterated"),
    (r"returned a (float|int) \(.*expected a Value", None, "common.float_for_value"),
    (r"gave a (float|int)\b.*not a Value", None, "node.returns_float"),
    (r"a child in some node's _prev is a (float|int)\b", None, "node.wrong_children"),
    (r"^Layer\(\d+, \d+\)\(x\) returned <", None, "layer.returns_one_output"),
    (r"unsupported operand type\(s\) for [-+*/]: '(int|float)' and 'Value'",
     r"\.data\s*[-+*/]\s*[A-Za-z_]\w*\b(?!\s*[.(\[])", "node.data_and_value_mixed"),
    (r"unsupported operand type\(s\) for \+=: '(int|float)' and 'Value'", r"\.grad\s*\+=", "node.value_added_to_grad"),
    (r"^a recorded loss is a Value\b", None, "train.records_values"),
    # it ran, and what it handed back shows the Value itself where its number belongs
    (r"^[\w.\[\]]*\.data is a Value\b", None, "node.data_is_a_value"),
    (r"^[\w.\[\]]*\.grad is a Value\b", None, "node.grad_is_a_value"),
    (r"unsupported operand type\(s\) for /: '(int|float)' and 'Value'", None, "rtruediv.number_on_the_left"),
    (r"unsupported operand type\(s\) for -: '(int|float)' and 'Value'", None, "rsub.number_on_the_left"),
    (r"unsupported operand type\(s\) for [+*]: '(int|float)' and 'Value'", None, "node.number_on_the_left"),
    (r"unsupported operand type\(s\) for \S+: 'Value' and '(int|float)'", None, "node.number_not_wrapped"),
)


# Errors whose misconception lives in the method that raised, whichever check ran it.
RAISED_IN_CULPRIT = frozenset({"node.number_not_wrapped"})


def error_misconception(error: str, line: str = "", raised: bool = True) -> str:
    """The misconception an error of learner code points at: a known one; else common.raised when learner code
    raised, common.unexpected_result when it ran but handed back something the probe could not read."""
    import re

    for pattern, at_line, mis in ERROR_MISCONCEPTIONS:
        if re.search(pattern, error) and (at_line is None or re.search(at_line, line or "")):
            return mis
    return "common.raised" if raised else "common.unexpected_result"


def place_line(place: dict | None) -> str:
    """`\n  at Cell In[5], line 3: `topo = topo.reverse()`` for the learner's own line that raised, or ''."""
    if not place:
        return ""
    text = f": `{place['text']}`" if place.get("text") else ""
    return f"\n  at {place['file']}, line {place['line']}{text}"


def fallback_id(check_name: str) -> str:
    """The id of a failure of check `check_name` that no known mistake explains."""
    return f"{check_name}.wrong_result"


def fallback_sentence(description: str) -> str:
    """The sentence for a check's fallback id, from what the check tests."""
    return (f"the numbers are not yet right for this check ({description}): compare each number with the expected "
            "one (where reproduce lines are shown, run them to see the case yourself)")


# The method a misconception lives in, by its id's prefix (for diagnoses whose numbers come from a whole expression).
METHOD_OF = {**ops.METHOD_OF, "backward": "Value.backward", "eq": "Value.__eq__", "repr": "Value.__repr__",
             "node": "a Value operation", "neuron": "Neuron", "layer": "Layer", "mlp": "MLP", "net": "parameters()", "mse": "mse_loss",
             "train": "train", "derivative": "numerical_derivative", "relerr": "relative_error",
             "manual": "the hand-filled grads", "tanh_bricks": "tanh_from_bricks", "grads_of": "grads_of",
             "common": "any exercise"}


def method_prefix(misconception: str | None) -> str:
    """`Value.__add__: ` for a misconception of __add__, or ''."""
    method = METHOD_OF.get((misconception or "").split(".")[0])
    return f"{method}: " if method else ""


def hint(misconception: str | None, name: str = "", sentence: str = "") -> str:
    """The sentence for a misconception id (or the `sentence` given for it), with `{name}` filled in ('' for None);
    a check's fallback id is looked up in the whole catalogue, `autograder.checks.MISCONCEPTIONS`."""
    if not misconception:
        return ""
    if not sentence and misconception not in MISCONCEPTIONS:
        from . import MISCONCEPTIONS as every  # the checks' fallbacks join the catalogue once every check is declared

        sentence = every[misconception]
    return at_level(sentence or MISCONCEPTIONS[misconception]).replace("{name}", name or "a node")


def hint_line(misconception: str | None, name: str = "", sentence: str = "") -> str:
    """`\\n  hint: ...` for a misconception id, or ''."""
    text = hint(misconception, name, sentence)
    return f"\n  hint: {text}" if text else ""


# Hints about `grad = ...` where `+=` belongs, and the check that tests each operation's accumulation alone: when
# those pass, the hint's claim is contradicted and ACCUMULATES_ALONE (what is known) replaces it.
ASSIGNS = frozenset({"node.assigns_instead_of_accumulating", "add.assigns_instead_of_accumulating",
                     "mul.assigns_instead_of_accumulating"})
LOCAL_CHECK = ops.LOCAL_CHECK
NOT_AN_OPERATION = frozenset({"Value.backward", "Value.__eq__", "Value.__hash__"})
ACCUMULATES_ALONE = "backward.loses_a_use"


def replace_hint(message: str, misconception: str, name: str = "") -> str:
    """The message with its hint line replaced by the sentence of `misconception`."""
    import re

    return re.sub(r"\n  hint: .*?(?=\n  \S|\Z)", lambda _: hint_line(misconception, name), message, count=1,
                  flags=re.S)


RECOVERED = "your {what} is `{got}`⟦; it should be `{want}`⟧{where}"


def recovered_line(recovered: dict[str, str]) -> str:
    """`\n  hint: your local slope is `1 - x**2`; it should be `1 - t**2`, where t is the output ...`."""
    where = f", where {recovered['where']}" if recovered.get("where") else ""
    return "\n  hint: " + at_level(RECOVERED).format(what=recovered["what"], got=recovered["got"],
                                                    want=recovered["want"], where=where)


REPRO_MARK = "\n  reproduce:\n"


def repro_lines(lines: Sequence[str]) -> str:
    """The indented `reproduce:` block that ends a failure message."""
    return REPRO_MARK + "\n".join("    " + ln for ln in lines)


def fmt(xs: Sequence[float]) -> str:
    """Numbers to 6 significant digits, comma separated."""
    return ", ".join(f"{x:.6g}" for x in xs)


NOT_DEFINED = "not implemented yet: define {targets}"
NOT_IMPLEMENTED = "not implemented yet: {error} (replace the `raise NotImplementedError()` line with your code)"
LEFTOVER_RAISE = "{where} raised NotImplementedError, though your code is written above it"
NEEDS_FIRST = "needs `{method}` to pass first; tested alone ({check}), it fails:\n{detail}"
NEEDS_FIRST_UNFINISHED = "needs `{method}` to pass first: it is not implemented yet"
SAME_CULPRIT = "fails because of `{method}`, see above"
FOUND_ALONE = "  (found by testing `{method}` alone: {check})"
MALFORMED = "the learner's process returned malformed data ({kind})"
LOOKED_UP_VISIBLE = ("passes its own inputs but not the same inputs moved by a fraction of a percent: the answers seem "
                     "looked up, not computed")
LOOKED_UP_HIDDEN = ("passes its hidden inputs but not one of them moved by a fraction of a percent: the answers seem "
                    "looked up, not computed")
# What the batch grader says in a cell's outputs (its feedback) when it flags the cell or cannot run it
FLAG_LOOKED_UP_VISIBLE = ("hard-coded answers? {name} passes its visible inputs but fails the same inputs moved by a "
                          "random 0.05-0.2%")
FLAG_AND_HIDDEN = " (and its hidden inputs)"
FLAG_LOOKED_UP_HIDDEN = ("hard-coded answers? {name} passes its hidden inputs but fails one of them moved by a random "
                         "0.05-0.2%")
FLAG_GRADERS_CODE = "the grader's own code submitted as the learner's: {name}"
FLAGGED = "⚠ flagged for review: {flag}"
NOT_GRADED = "Not graded: {reason}"

# notebook 2's hand-filled gradients: not started yet, and the rule each node's gradient follows
MANUAL_NOT_DONE = ("not done yet: every .grad is still 0, as Value(...) left it: fill them in, from L.grad = 1 "
                   "(dL/dL) back to a.grad and b.grad")
MANUAL_RULES = {
    "L": "dL/dL is 1",
    "d": "L = d * f: `*` swaps, so dL/dd is the other factor's data⟦, f.data⟧",
    "f": "L = d * f: `*` swaps, so dL/df is the other factor's data⟦, d.data⟧",
    "c": "d = e + c: `+` routes d's gradient unchanged⟦, so c.grad = d.grad⟧",
    "e": "d = e + c: `+` routes d's gradient unchanged⟦, so e.grad = d.grad⟧",
    "a": "e = a * b: `*` swaps, times the gradient flowing in⟦, so a.grad = b.data * e.grad⟧",
    "b": "e = a * b: `*` swaps, times the gradient flowing in⟦, so b.grad = a.data * e.grad⟧",
}
LOSS_DID_NOT_FALL = "the loss did not fall"
