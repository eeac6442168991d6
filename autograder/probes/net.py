"""Probes of the net: models built with the learner's classes, weights set through parameters(), outputs read back."""

from __future__ import annotations

from typing import Any

from .graphs import reachable, read_output, set_parameters
from .safe import LearnerError, read_number, short_repr

Case = dict[str, Any]
Observation = dict[str, Any]
Namespace = Any


def _reach(out: Any, params: list[Any]) -> int:
    """How many parameters the output's graph reaches (all of them, unless the graph was cut)."""
    return reachable(out, params) if hasattr(out, "_prev") else 0


def probe_neuron(ns: Namespace, case: Case) -> Observation:
    """Neuron(nin): its parameter count, tanh(w.x + b) for weights set through parameters(), and whether the
    output's graph reaches every parameter."""
    n = ns["Neuron"](case["nin"])
    params = set_parameters(n, case["weights"])
    outs = [n(x) for x in case["xs"]]
    return {"count": len(params), "outputs": [[read_output(o, "Neuron(x)")] for o in outs],
            "reach": _reach(outs[0], params)}


def probe_init(ns: Namespace, case: Case) -> Observation:
    """The starting parameters of a few fresh Neuron(nin), as the learner's __init__ draws them."""
    draws = []
    for _ in range(case["neurons"]):
        params = list(ns["Neuron"](case["nin"]).parameters())[:100]
        draws.append([read_number(getattr(p, "data", p), "a starting parameter's data") for p in params])
    return {"draws": draws}


def probe_layer(ns: Namespace, case: Case) -> Observation:
    """Layer(nin, nout): one Value when nout == 1, else a list of nout Values."""
    nin, nout = case["nin"], case["nouts"][0]
    layer = ns["Layer"](nin, nout)
    params = set_parameters(layer, case["weights"])
    outputs = []
    first = None
    for x in case["xs"]:
        out = layer(x)
        if nout == 1:
            outputs.append([read_output(out, "Layer(nin, 1)(x)")])
            outs = [out]
        else:
            if not isinstance(out, (list, tuple)) or len(out) != nout:
                raise LearnerError(f"Layer({nin}, {nout})(x) returned {short_repr(out)}, expected a list of {nout} Values")
            outs = list(out)
            outputs.append([read_output(o, "Layer(x)[i]") for o in outs])
        first = first or outs
    single = ns["Layer"](nin, 1)([0.5] * nin)
    reach = sum(_reach(o, params) for o in first or [])
    return {"count": len(params), "outputs": outputs, "reach": reach,
            "single_is_value": hasattr(single, "data") and not isinstance(single, (list, tuple))}


def probe_mlp(ns: Namespace, case: Case) -> Observation:
    """MLP(nin, nouts): parameter count, its output for weights set through parameters(), and the graph's reach."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = set_parameters(model, case["weights"])
    outs = [model(x) for x in case["xs"]]
    return {"count": len(params), "outputs": [[read_output(o, "MLP(x)")] for o in outs], "reach": _reach(outs[0], params)}


def probe_loss(ns: Namespace, case: Case) -> Observation:
    """mse_loss on a fresh model: its value and every parameter's gradient after backward()."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = set_parameters(model, case["weights"])
    loss = ns["mse_loss"](model, case["xs"], case["ys"])
    data = read_output(loss, "mse_loss")
    loss.backward()
    return {"count": len(params), "data": data, "grads": [read_number(p.grad, "parameter.grad") for p in params]}


def probe_train(ns: Namespace, case: Case) -> Observation:
    """train() from known starting weights: the losses it records."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = set_parameters(model, case["weights"])
    losses = ns["train"](model, case["xs"], case["ys"], case["steps"], case["lr"])
    try:
        items = list(losses)[: case["steps"] + 10]
    except TypeError:
        raise LearnerError(f"train returned a {type(losses).__name__}, expected a list of losses") from None
    return {"count": len(params), "losses": [read_number(x, "a recorded loss") for x in items]}
