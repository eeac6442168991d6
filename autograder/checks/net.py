"""The net: Neuron, Layer, MLP, mse_loss and train (notebook 6), against the grader's own plain-float net."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from ..settings import Tolerance
from ..truth import net as nref
from ..truth.numeric import central_difference, grad_close, value_close
from ..truth.slips import Space, Vec, equal_on, evaluate, recover
from . import messages as msg
from .base import ERROR, Case, Check, Failure, Observation
from .common import judge_by_probe
from .registry import Topic

TOPIC = Topic()
register = TOPIC.add


def _call(kind: str, nin: int, nouts: Sequence[int]) -> str:
    return {"Neuron": f"Neuron({nin})", "Layer": f"Layer({nin}, {nouts[0]})", "MLP": f"MLP({nin}, {list(nouts)})"}[kind]


def net_repro(build: str, weights: Sequence[float], *lines: str) -> str:
    """Lines that rebuild a model with the case's weights and show the failing numbers."""
    return msg.repro_lines([f"model = {build}", f"for p, w in zip(model.parameters(), {list(weights)!r}):",
                            "    p.data = w", *lines])


def net_cases(kind: str, shape: tuple[int, list[int]], n_inputs: int) -> Callable[[random.Random, bool], list[Case]]:
    """Weights and inputs for a model of the given shape (and, for a Neuron, its own starting weights first)."""
    nin, nouts = shape

    def cases(rng: random.Random, hidden: bool) -> list[Case]:
        out: list[Case] = [{"probe": "init", "nin": 4, "neurons": 3}] if kind == "Neuron" else []
        for _ in range(2 if hidden else 1):
            weights = nref.random_weights(rng, nin, nouts)
            xs = [[round(rng.uniform(-1, 1), 3) for _ in range(nin)] for _ in range(n_inputs)]
            out.append({"probe": kind.lower(), "nin": nin, "nouts": nouts, "weights": weights, "xs": xs})
        return out

    return cases


def _init_repro(nin: int) -> str:
    return msg.repro_lines(["for _ in range(3):", f"    print([p.data for p in Neuron({nin}).parameters()])"])


def judge_init(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """Starting weights: random (each Neuron its own), distinct within a neuron, within a sensible range."""
    nin = case["nin"]
    draws = obs["draws"]
    call = f"Neuron({nin}).parameters()"
    if any(len(d) != nin + 1 for d in draws):
        return None  # the parameter count is judged with the outputs, which say more
    weights = [d[:nin] for d in draws]
    first = weights[0]
    distinct = obs.get("distinct") or []
    if distinct and distinct[0] < len(draws[0]):
        return Failure(f"Neuron.__init__: {call} lists {len(draws[0])} parameters but only {distinct[0]} distinct "
                       f"Value objects (the weights read {msg.fmt(first)})", "neuron.shared_weight", method="Neuron",
                       repro=_init_repro(nin))
    if len(set(first)) < nin:
        return Failure(f"Neuron.__init__: the starting weights of {call}: expected {nin} different random numbers, "
                       f"got {msg.fmt(first)}", "neuron.zero_init", method="Neuron", repro=_init_repro(nin))
    if all(w == first for w in weights[1:]):
        return Failure(f"Neuron.__init__: {len(draws)} new Neuron({nin}): expected different random weights each time, "
                       f"got {msg.fmt(first)} every time", "neuron.same_weights_each_time", method="Neuron",
                       repro=_init_repro(nin))
    big = max(abs(x) for d in draws for x in d)
    if big > 5.0:
        return Failure(f"Neuron.__init__: the starting parameters of {call}: expected numbers of about -1 .. 1, got "
                       f"{big:.6g}", "neuron.init_out_of_range", method="Neuron", repro=_init_repro(nin))
    return None


def _without_bias(weights: Sequence[float], nin: int, nouts: Sequence[int]) -> list[float]:
    """The same parameters with every bias 0: what a neuron computes when it leaves its bias out."""
    out, k, sizes = list(weights), 0, [nin, *nouts]
    for fan_in, n in zip(sizes, nouts):
        for _ in range(n):
            k += fan_in
            out[k] = 0.0
            k += 1
    return out


def _last_layer_on_input(weights: Sequence[float], nouts: Sequence[int], x: Sequence[float]) -> list[float]:
    """The outputs of an MLP that feeds every layer the original input, so only the last layer's counts (its zip
    over weights and inputs stopping at the shorter)."""
    import math

    nin_last, n = nouts[-2], nouts[-1]
    last = list(weights[len(weights) - (nin_last + 1) * n:])
    outs = []
    for k in range(n):
        chunk = last[k * (nin_last + 1): (k + 1) * (nin_last + 1)]
        outs.append(math.tanh(sum(w * xi for w, xi in zip(chunk[:-1], x)) + chunk[-1]))
    return outs


def _described(kinds: dict[str, int]) -> str:
    """`3 Values and 1 list`: what parameters() returned, by kind."""
    parts = [f"{n} {k if k == 'Value' else k + ' object'}{'s' * (n != 1)}" for k, n in kinds.items()]
    return " and ".join(parts) or "nothing"


def structure_failure(kind: str, case: Case, obs: Observation) -> Failure | None:
    """When parameters() lists the wrong things, which holds the bug: __init__ (the counts of weights per neuron,
    neurons per layer, layers per MLP, matching nin and nouts, read from the objects the model holds) or
    parameters() itself. None when the count is right, or the structure cannot be read."""
    nin, nouts, weights = case["nin"], case["nouts"], case["weights"]
    call = _call(kind, nin, nouts)
    kinds = obs.get("kinds") or {}
    count_line = msg.repro_lines([f"print(len({call}.parameters()))  # expected {len(weights)}"])
    others = {k: n for k, n in kinds.items() if k != "Value"}
    if others:
        return Failure(f"{kind}.parameters(): what {call}.parameters() returns: expected {len(weights)} Values, got "
                       f"{_described(kinds)}", "net.parameters_not_values", method=kind, repro=count_line)
    if obs["count"] == len(weights):
        return None
    sizes = [nin, *nouts]
    held = obs.get("held")
    if kind == "Neuron" and isinstance(held, int) and held:
        if held != nin + 1:
            return Failure(f"Neuron.__init__: {call} gave {held} Values of its own; expected {nin + 1} (one weight "
                           f"per input and a bias)", "neuron.weight_count", method=kind, repro=count_line)
        return Failure(f"Neuron.parameters(): {call} holds its {nin + 1} Values (weights and bias), but parameters() "
                       f"lists some of them: expected {nin + 1}, got {obs['count']}", "net.parameters_incomplete",
                       method=kind, repro=count_line)
    if kind == "Layer" and isinstance(held, list) and held:
        if len(held) != nouts[0]:
            return Failure(f"Layer.__init__: {call} gave {len(held)} neuron{'s' * (len(held) != 1)}; expected {nouts[0]} "
                           "(nout)",
                           "layer.neuron_count", method=kind, repro=count_line)
        if any(h != nin + 1 for h in held):
            wrong = next(h for h in held if h != nin + 1)
            return Failure(f"Layer.__init__: {call} gave neurons of {wrong - 1} inputs; expected {nin} (nin) "
                           "inputs each", "layer.neuron_inputs", method=kind, repro=count_line)
        return Failure(f"Layer.parameters(): {call} holds {nouts[0]} neurons of {nin + 1} Values each, but "
                       f"parameters() lists some of them: expected {len(weights)}, got {obs['count']}",
                       "net.parameters_incomplete", method=kind, repro=count_line)
    if kind == "MLP" and isinstance(held, list) and held and all(isinstance(h, list) for h in held):
        if len(held) != len(nouts):
            return Failure(f"MLP.__init__: {call} gave {len(held)} layer{'s' * (len(held) != 1)}; expected "
                           f"{len(nouts)} (one per entry of nouts)", "mlp.layer_count", method=kind, repro=count_line)
        got = [(len(h), (h[0] - 1) if h else 0) for h in held]
        want = [(sizes[i + 1], sizes[i]) for i in range(len(nouts))]
        if got != want:
            mis = "mlp.layers_all_take_nin" if all(n_in == nin for _, n_in in got) else "mlp.layer_sizes"
            shown = ", ".join(f"Layer({i}, {o})" for o, i in got)
            return Failure(f"MLP.__init__: {call} gave {shown}; expected "
                           + ", ".join(f"Layer({i}, {o})" for o, i in want), mis, method=kind,
                           repro=count_line)
        return Failure(f"MLP.parameters(): {call} holds the right layers, but parameters() lists some of their "
                       f"Values: expected {len(weights)}, got {obs['count']}", "net.parameters_incomplete", method=kind,
                       repro=count_line)
    return None


def judge_forward(kind: str) -> Callable[[Case, Observation, Tolerance], Failure | None]:
    """Structure first (__init__'s counts, then parameters()), outputs against the grader's own tanh layers (with a
    hint on order), and no graph cut."""

    def judge(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
        nin, nouts, weights = case["nin"], case["nouts"], case["weights"]
        call = _call(kind, nin, nouts)
        structure = structure_failure(kind, case, obs)
        if structure:
            return structure
        if obs.get("output_error") and obs["count"] == len(weights):
            error = msg.probe_error(obs["output_error"])
            return Failure(error, msg.error_misconception(error, raised=False), status=ERROR, method=kind)
        if obs["count"] != len(weights):
            mis = "net.parameter_count"
            if kind == "MLP" and obs["count"] == sum((nin + 1) * n for n in nouts):
                mis = "mlp.layers_all_take_nin"
            return Failure(f"{call}.parameters() has {obs['count']} Values, expected {len(weights)} "
                           f"(every weight and bias, layer by layer, neuron by neuron)", mis, method=kind,
                           repro=msg.repro_lines([f"print(len({call}.parameters()))  # expected {len(weights)}"]))
        if kind == "Layer" and not obs["single_is_value"]:
            x = [0.5] * nin
            return Failure(f"Layer({nin}, 1)(x) returned a list; expected the one output Value",
                           "layer.returns_list_for_one",
                           repro=msg.repro_lines([f"print(Layer({nin}, 1)({x!r}))  # expected one Value, not a list"]))
        for x, got in zip(case["xs"], obs["outputs"]):
            want = nref.forward(weights, nin, nouts, x)
            if all(value_close(g, w, 1e-9) for g, w in zip(got, want)):
                continue
            mis = None
            alt = nref.forward(weights, nin, nouts, x, bias_first=True)
            if all(value_close(g, w, 1e-9) for g, w in zip(got, alt)):
                mis = "neuron.bias_first"
            elif all(value_close(g, w, 1e-9) for g, w in zip(got, nref.forward(weights, nin, nouts, x, activation=False))):
                mis = "neuron.missing_tanh"
            elif all(value_close(g, w, 1e-9) for g, w in zip(got, nref.forward(_without_bias(weights, nin, nouts), nin,
                                                                                  nouts, x))):
                mis = "neuron.missing_bias"
            elif kind == "Layer" and len(got) > 1 and len(set(got)) == 1 and len(set(want)) > 1:
                mis = "layer.shared_neuron"  # one Neuron listed nout times: the last weights set win everywhere
            elif kind == "MLP" and len(nouts) > 1 and all(value_close(g, w, 1e-9)
                                                          for g, w in zip(got, _last_layer_on_input(weights, nouts, x))):
                mis = "mlp.layers_not_chained"
            order = None if mis else _order_failure(kind, case, obs)
            if order:
                return order
            recovered = _recover_neuron(case, obs) if mis is None and kind == "Neuron" else None
            show = "model(x).data" if kind != "Layer" or nouts[0] == 1 else "[o.data for o in model(x)]"
            repro = net_repro(call, weights, f"x = {x!r}", f"print({show})  # expected {msg.fmt(want)}")
            return Failure(f"{call}(x) at x = {x} with weights set through parameters(): expected {msg.fmt(want)}, "
                           f"got {msg.fmt(got)}", "neuron.wrong_formula" if recovered else mis, repro=repro,
                           recovered=recovered)
        first = "[0]" if kind == "Layer" and nouts[0] > 1 else ""
        if obs["reach"] < len(weights):  # a Layer's outputs reach their own neuron's parameters each
            return Failure(f"{call}(x): expected the output's graph to reach all {len(weights)} parameters through "
                           f"_prev, got {obs['reach']} (a graph cut)", "neuron.graph_cut", method="Neuron",
                           repro=net_repro(call, weights, f"out = model({case['xs'][0]!r}){first}", "out.backward()",
                                           "print([p.grad for p in model.parameters()])  # expected: not all zero"))
        return None

    return judge


def _spec_roles(nin: int, nouts: Sequence[int]) -> list[tuple[int, int, int]]:
    """[layer, neuron, position] of every parameter in the spec's order: layer by layer, neuron by neuron, weights
    (positions 0, 1, ...) then the bias (-1)."""
    sizes = [nin, *nouts]
    return [(li, ni, k) for li, n in enumerate(nouts) for ni in range(n) for k in (*range(sizes[li]), -1)]


def _role_text(role: Sequence[int], layered: bool) -> str:
    li, ni, k = role
    what = "the bias" if k < 0 else f"weight {k}"
    return f"{what} of neuron {ni}" + (f" of layer {li}" if layered else "")


def _order_failure(kind: str, case: Case, obs: Observation) -> Failure | None:
    """parameters() lists the model's own Values in another order than the spec's, and that order explains the
    outputs: each weight set through parameters() landed elsewhere (read from where the model holds each Value)."""
    nin, nouts, weights = case["nin"], case["nouts"], case["weights"]
    got_roles = [tuple(r) for r in obs.get("roles") or []]
    spec = _spec_roles(nin, nouts)
    if sorted(got_roles) != sorted(spec) or got_roles == spec:
        return None
    index = {role: i for i, role in enumerate(spec)}
    placed = [0.0] * len(spec)
    for w, role in zip(weights, got_roles):
        placed[index[role]] = w
    if not all(all(value_close(g, w, 1e-9) for g, w in zip(got, nref.forward(placed, nin, nouts, x)))
               for x, got in zip(case["xs"], obs["outputs"])):
        return None
    first = next(i for i, (a, b) in enumerate(zip(got_roles, spec)) if a != b)
    layered = kind == "MLP"
    return Failure(f"{kind}.parameters(): {_call(kind, nin, nouts)}.parameters() lists {_role_text(got_roles[first], layered)} "
                   f"at position {first}, where the spec has {_role_text(spec[first], layered)} (each neuron's weights, "
                   "then its bias, neuron by neuron, layer by layer); setting the weights through it explains every "
                   "output", "net.parameters_order", method=kind,
                   repro=msg.repro_lines([f"print(len({_call(kind, nin, nouts)}.parameters()))"]))


NEURON = Space("tanh(dot(w, x) + b)", ("w", "x", "b"), ("tanh",),
               (("w", -0.6, 0.6, 3), ("x", -1.0, 1.0, 3), ("b", -0.6, 0.6)),
               where="dot(w, x) is w0*x0 + w1*x1 + ..., b the bias")


def _recover_neuron(case: Case, obs: Observation) -> dict[str, str] | None:
    """The one slip of tanh(w . x + b) that gives every output the learner's Neuron gave (weights set through
    parameters(), in the spec's order)."""
    nin, weights = case["nin"], case["weights"]
    w, b = Vec(weights[:nin]), weights[nin]
    points = [({"w": w, "x": Vec(x), "b": b}, got[0]) for x, got in zip(case["xs"], obs["outputs"]) if got]

    def matches(text: str) -> bool:
        values = [evaluate(text, env) for env, _ in points]
        return bool(points) and all(v is not None and value_close(g, v, 1e-9) for v, (_, g) in zip(values, points))

    found = recover(NEURON.formula, NEURON.candidates(), matches, NEURON.where, equal_on(NEURON, {}))
    return {"what": "Neuron(x)", "got": found.got, "want": found.want, "where": found.where} if found else None


def net_during(case: Case) -> str:
    """What ran when learner code raised on a net case."""
    if case["probe"] == "init":
        return f"\n  while making Neuron({case['nin']}) and reading its parameters()"
    kind = {"neuron": "Neuron", "layer": "Layer", "mlp": "MLP"}[case["probe"]]
    call = _call(kind, case["nin"], case["nouts"])
    return f"\n  while building {call} and calling it" + net_repro(call, case["weights"], f"x = {case['xs'][0]!r}",
                                                                  "print(model(x))")


# The Value a net is built on is the grader's while a net check runs (probes/scaffold.py); a Layer is made of the
# learner's Neurons and an MLP of their Layers (the notebook says so), so those are pinned first when they fail.
register(Check("neuron_forward", ("Neuron",), "Neuron(nin)(x) is tanh(w.x + b), from random starting weights",
               net_cases("Neuron", (3, [1]), 3), judge_by_probe(init=judge_init, neuron=judge_forward("Neuron")),
               group="net", during=net_during))
register(Check("layer_forward", ("Layer",), "Layer(nin, nout) holds nout neurons", net_cases("Layer", (3, [2]), 3),
               judge_forward("Layer"), group="net", during=net_during, prerequisites=("neuron_forward",)))
register(Check("mlp_forward", ("MLP",), "MLP(nin, nouts): parameters in order, layers chained",
               net_cases("MLP", (3, [4, 4, 1]), 3), judge_forward("MLP"), group="net", during=net_during,
               prerequisites=("layer_forward",)))

# ---------------------------------------------------------------- loss and training

LOSS_SHAPE = (2, [3, 1])
LOSS_DATA_SIZES = [3, 5, 6]  # never 4, the size of notebook 6's own toy data set


def loss_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """A small model's weights and a four-example data set."""
    nin, nouts = LOSS_SHAPE
    cases = []
    sizes = rng.sample(LOSS_DATA_SIZES, 2 if hidden else 1)  # a mean over a fixed count (`/ 4`) fails somewhere
    for size in sizes:
        weights = nref.random_weights(rng, nin, nouts)
        xs = [[rng.choice((-1.0, 1.0)) * round(rng.uniform(0.2, 1), 3) for _ in range(nin)] for _ in range(size)]
        ys = [rng.choice((-1.0, 1.0)) * round(rng.uniform(0.5, 1.0), 3) for _ in range(size)]
        cases.append({"probe": "loss", "nin": nin, "nouts": nouts, "weights": weights, "xs": xs, "ys": ys})
    return cases


def _loss_where(case: Case) -> str:
    return f"mse_loss(MLP({case['nin']}, {case['nouts']}), xs, ys) with xs = {case['xs']}, ys = {case['ys']}"


def judge_loss(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """The loss is the mean squared error, and each parameter's gradient matches the numerical one."""
    nin, nouts, weights, xs, ys = case["nin"], case["nouts"], case["weights"], case["xs"], case["ys"]
    where = _loss_where(case)
    if obs["count"] != len(weights):
        return Failure(f"MLP({nin}, {nouts}).parameters() has {obs['count']} Values, expected {len(weights)}",
                       "net.parameter_count")
    want = nref.mse(weights, nin, nouts, xs, ys)
    setup = [f"xs = {xs!r}; ys = {ys!r}", "loss = mse_loss(model, xs, ys)"]
    if value_close(obs["data"], want, tol.forward_rtol) and obs.get("reach") == 0 and not any(obs["grads"]):
        return Failure(f"{where}: the value is right ({want:.10g}), but the loss's graph reaches none of the "
                       f"{len(weights)} parameters through _prev, and every gradient stayed 0", "mse.graph_cut",
                       repro=net_repro(f"MLP({nin}, {nouts})", weights, *setup, "loss.backward()",
                                       "print([p.grad for p in model.parameters()])  # expected: not all zero"))
    if not value_close(obs["data"], want, tol.forward_rtol):
        mis = "mse.is_sum" if value_close(obs["data"], want * len(xs), 1e-9) else None
        errors = [nref.forward(weights, nin, nouts, x)[0] - y for x, y in zip(xs, ys)]
        for m, wrong in (("mse.not_squared", sum(errors) / len(xs)), ("mse.not_squared", -sum(errors) / len(xs)),
                         ("mse.square_of_sum", sum(errors) ** 2 / len(xs)), ("mse.square_of_sum", sum(errors) ** 2)):
            if mis is None and value_close(obs["data"], wrong, 1e-9):
                mis = m
        count = None
        for k in range(1, 11):  # a mean over another count: the data sets differ in size from case to case
            if mis is None and k != len(xs) and value_close(obs["data"], want * len(xs) / k, 1e-9):
                mis, count = "mse.fixed_count", k
        repro = net_repro(f"MLP({nin}, {nouts})", weights, *setup, f"print(loss.data)  # expected {want:.10g}")
        divided = f" (the sum of squared errors divided by {count}, for {len(xs)} examples)" if count else ""
        preds = [nref.forward(weights, nin, nouts, x)[0] for x in xs]
        recovered = None if mis else _recover_loss(preds, ys, obs["data"])
        return Failure(f"{where}: expected {want:.10g}, got {obs['data']:.10g}{divided}",
                       "mse.wrong_formula" if recovered else mis, repro=repro, recovered=recovered)
    est = nref.mse_gradient(weights, nin, nouts, xs, ys)
    for i, (g, e) in enumerate(zip(obs["grads"], est)):
        if not grad_close(g, e.value, want, tol.rtol, tol.atol):
            repro = net_repro(f"MLP({nin}, {nouts})", weights, *setup, "loss.backward()",
                              f"print(model.parameters()[{i}].grad)  # expected {e.value:.10g}")
            return Failure(f"gradient of parameter {i} (of {len(weights)}, in parameters() order) after "
                           f"{where}.backward(): expected {e.value:.10g} (numerical), got {g:.10g}", repro=repro)
    return None


MSE = Space("sum((p - y) ** 2) / n", ("p", "y", "n"), (), (("p", -1.0, 1.0, 4), ("y", -1.0, 1.0, 4), ("n", 4.0, 4.0)),
            where="p holds model(x) for each example, y the targets, n how many examples")


def _recover_loss(preds: Sequence[float], ys: Sequence[float], got: float) -> dict[str, str] | None:
    """The one slip of the mean squared error that gives the learner's loss on this data set."""
    env = {"p": Vec(preds), "y": Vec(ys), "n": float(len(ys))}

    def matches(text: str) -> bool:
        v = evaluate(text, env)
        return v is not None and value_close(got, v, 1e-9)

    found = recover(MSE.formula, MSE.candidates(), matches, MSE.where, equal_on(MSE, {}))
    return {"what": "mse_loss", "got": found.got, "want": found.want, "where": found.where} if found else None


def loss_during(case: Case) -> str:
    """What ran when learner code raised in mse_loss."""
    repro = net_repro(f"MLP({case['nin']}, {case['nouts']})", case["weights"], f"xs = {case['xs']!r}; ys = {case['ys']!r}",
                      "loss = mse_loss(model, xs, ys)", "loss.backward()", "print(loss.data)")
    return f"\n  while computing {_loss_where(case)}{repro}"


# the model mse_loss is given is the grader's MLP, and the backward() it is judged by the grader's (probes/scaffold.py)
register(Check("mse_loss_backward", ("mse_loss",), "mse_loss is the mean squared error, with its gradients",
               loss_cases, judge_loss, group="net", during=loss_during))

TRAIN_STEPS = [3, 7, 8]  # at least 2 away from 5 and 10, the counts a train() that ignores its steps would likely use
TRAIN_LRS = [0.07, 0.09, 0.13]  # never 0.1 or 0.05, the step sizes a train() that ignores its lr would likely use


def train_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Loss cases plus a step count and learning rate."""
    cases = loss_cases(rng, hidden)
    steps, lrs = rng.sample(TRAIN_STEPS, len(cases)), rng.sample(TRAIN_LRS, len(cases))  # each case its own
    for c, n, lr in zip(cases, steps, lrs):
        c.update(probe="train", steps=n, lr=lr)
    return cases


TRAINING_MISTAKES = {"no_zero_grad": "train.no_zero_grad", "ascent": "train.ascends",
                     "record_after": "train.records_after_update", "data_step": "train.steps_by_data"}


def _train_args(case: Case) -> dict:
    return {k: case[k] for k in ("nin", "nouts", "weights", "xs", "ys", "steps", "lr")}


def _train_where(case: Case) -> str:
    return f"train(MLP({case['nin']}, {case['nouts']}), xs, ys, steps={case['steps']}, lr={case['lr']})"


def _train_repro(case: Case, want: Sequence[float] | None = None) -> str:
    comment = f"  # expected {msg.fmt(want)}" if want else ""
    return net_repro(f"MLP({case['nin']}, {case['nouts']})", case["weights"], f"xs = {case['xs']!r}; ys = {case['ys']!r}",
                     f"print(train(model, xs, ys, {case['steps']}, {case['lr']})){comment}")


def judge_train(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """The recorded losses follow plain gradient descent from the same start, and fall."""
    args = _train_args(case)
    where = _train_where(case)
    want = nref.descend(**args)
    repro = _train_repro(case, want)
    got = obs["losses"]

    def same(a: list[float], b: list[float]) -> bool:
        return len(a) == len(b) and all(grad_close(x, y, y, tol.rtol, tol.atol) for x, y in zip(a, b))

    if same(got, want):
        return None if want[-1] < want[0] else Failure(msg.LOSS_DID_NOT_FALL)
    mis = None
    first_same = bool(got) and same(got[:1], want[:1])  # all but record_after record the same first loss
    for mistake, m in TRAINING_MISTAKES.items():
        if mis is None and (first_same or mistake == "record_after") and same(
                got, nref.descend(**args, mistake=mistake, quick=True)):
            mis = m
    if first_same:
        for lr in (0.1, 0.01, 0.05, 1.0):
            if mis is None and same(got, nref.descend(**{**args, "lr": lr}, quick=True)):
                mis = "train.ignores_lr"
        if mis is None and same(got, nref.descend(**{**args, "lr": 2 * args["lr"]}, quick=True)):
            mis = "train.step_doubled"
    if mis is None and len(got) > 1 and all(x == got[0] for x in got):
        # the parameters moved (or not): the loss recorded is a stale one, or nothing was updated
        mis = "train.loss_not_recomputed" if obs.get("moved") else "train.loss_never_changes"
    if mis is None and len(got) >= 3 and same(got[:2], want[:2]):
        mis = "train.partial_zero_grad"  # the first update is right (its gradients were fresh), later ones drift
    if len(got) != len(want):
        mis = "train.steps_off_by_one" if abs(len(got) - len(want)) == 1 else "train.ignores_steps"
        return Failure(f"{where} returned {len(got)} losses, expected one per step ({len(want)})", mis, repro=repro)
    recovered = _recover_update(args, got) if mis is None and first_same and len(got) > 1 else None
    return Failure(f"{where}: expected losses {msg.fmt(want)} (plain gradient descent from the same weights), "
                   f"got {msg.fmt(got)}", "train.wrong_formula" if recovered else mis, repro=repro, recovered=recovered)


UPDATE = Space("p - lr * g", ("p", "g", "lr", "L"), (), (("p", -0.6, 0.6), ("g", -1.0, 1.0), ("lr", 0.05, 0.15),
                                                          ("L", 0.2, 1.5)),
               where="p is p.data, g is p.grad, lr the step size and L the loss before the step")


def _descend_with(args: dict, update: str) -> list[float] | None:
    """The losses gradient descent records when each parameter moves to `update` (one central difference per
    parameter for the gradient, as descend(quick=True))."""
    nin, nouts, xs, ys, lr = args["nin"], args["nouts"], args["xs"], args["ys"], args["lr"]
    w, losses = list(args["weights"]), []

    def loss(*p: float) -> float:
        return nref.mse(p, nin, nouts, xs, ys)

    for _ in range(args["steps"]):
        current = loss(*w)
        losses.append(current)
        g = [central_difference(loss, w, i, 1e-6 * max(1.0, abs(wi))) for i, wi in enumerate(w)]
        moved = [evaluate(update, {"p": p, "g": gi, "lr": lr, "L": current}) for p, gi in zip(w, g)]
        if any(m is None for m in moved):
            return None
        w = moved  # type: ignore[assignment]
    return losses


def _recover_update(args: dict, got: Sequence[float]) -> dict[str, str] | None:
    """The one slip of the update p.data -= lr * p.grad that gives the learner's recorded losses: candidates are
    told apart by the second loss (one step each), and the one left must give every loss."""
    nin, nouts, xs, ys, lr = args["nin"], args["nouts"], args["xs"], args["ys"], args["lr"]
    w0 = list(args["weights"])
    first = nref.mse(w0, nin, nouts, xs, ys)
    g0 = [e.value for e in nref.mse_gradient(w0, nin, nouts, xs, ys)]

    def second(text: str) -> bool:
        w1 = [evaluate(text, {"p": p, "g": g, "lr": lr, "L": first}) for p, g in zip(w0, g0)]
        return all(v is not None for v in w1) and grad_close(got[1], nref.mse(w1, nin, nouts, xs, ys), got[1], 1e-6, 1e-9)

    found = recover(UPDATE.formula, UPDATE.candidates(), second, UPDATE.where, equal_on(UPDATE, {}))
    if found is None:
        return None
    again = _descend_with(args, found.got)
    if again is None or not all(grad_close(a, b, b, 1e-6, 1e-9) for a, b in zip(got, again)):
        return None
    return {"what": "update of each p.data", "got": found.got, "want": found.want, "where": found.where}


# train is given the grader's MLP, and the mse_loss it calls is the grader's (probes/scaffold.py)
register(Check("train_descends", ("train",), "train() is plain gradient descent with its lr, and the loss falls",
               train_cases, judge_train, group="net",
               during=lambda case: f"\n  while running {_train_where(case)}{_train_repro(case)}"))
