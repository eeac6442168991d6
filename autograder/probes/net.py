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


def held(obj: Any, kind: Any, limit: int = 1000) -> list[Any]:
    """The instances of `kind` an object holds in its attributes, directly or in a list, tuple or dict (by identity,
    whatever the attributes are called)."""
    found: dict[int, Any] = {}
    try:
        attrs = list(vars(obj).values())
    except TypeError:  # __slots__
        attrs = [getattr(obj, n) for k in type(obj).__mro__ for n in getattr(k, "__slots__", ()) if hasattr(obj, n)]
    for a in attrs[:100]:
        items = list(a.values())[:limit] if isinstance(a, dict) else a[:limit] if isinstance(a, (list, tuple)) else [a]
        for x in items:
            if isinstance(x, kind):
                found.setdefault(id(x), x)
    return list(found.values())


def _kinds(params: list[Any], value: Any) -> dict[str, int]:
    """How many of parameters() are Values, and of which other types the rest are."""
    kinds: dict[str, int] = {}
    for p in params:
        name = "Value" if isinstance(p, value) else type(p).__name__
        kinds[name[:40]] = kinds.get(name[:40], 0) + 1
    return kinds


def _neuron_shape(ns: Namespace, neuron: Any) -> int:
    return len(held(neuron, ns["Value"]))


def _layer_shape(ns: Namespace, layer: Any) -> list[int]:
    """The number of Values each neuron the layer holds holds itself."""
    return [_neuron_shape(ns, n) for n in held(layer, ns["Neuron"])] if isinstance(ns.get("Neuron"), type) else []


def _outputs(fn: Any, xs: list[Any], what: str) -> tuple[list[list[float]], list[Any], dict[str, Any] | None]:
    """The model's one output at each input, or the probe's reason it could not read one, as data (learner errors
    raise)."""
    outs, read = [], []
    for x in xs:
        out = fn(x)
        outs.append(out)
        try:
            read.append([read_output(out, what)])
        except LearnerError as exc:
            return read, outs, exc.as_data()
    return read, outs, None


def probe_neuron(ns: Namespace, case: Case) -> Observation:
    """Neuron(nin): its parameter count, tanh(w.x + b) for weights set through parameters(), and whether the
    output's graph reaches every parameter; the Values it holds, to tell __init__'s counts from parameters()'."""
    n = ns["Neuron"](case["nin"])
    params = set_parameters(n, case["weights"])
    read, outs, error = _outputs(n, case["xs"], "Neuron(x)")
    return {"count": len(params), "kinds": _kinds(params, ns["Value"]), "held": _neuron_shape(ns, n),
            "outputs": read, "output_error": error, "reach": _reach(outs[0], params) if not error else 0}


def probe_init(ns: Namespace, case: Case) -> Observation:
    """The starting parameters of a few fresh Neuron(nin), as the learner's __init__ draws them, and how many distinct
    objects each neuron's parameters() lists."""
    draws, distinct = [], []
    for _ in range(case["neurons"]):
        params = list(ns["Neuron"](case["nin"]).parameters())[:100]
        draws.append([read_number(getattr(p, "data", p), "a starting parameter's data") for p in params])
        distinct.append(len({id(p) for p in params}))
    return {"draws": draws, "distinct": distinct}


def roles(ns: Namespace, model: Any, params: list[Any]) -> list[list[int]] | None:
    """For each of parameters(), where the model holds it: [layer, neuron, position], the position a weight's index
    in the neuron's list of weights or -1 for its bias (a Value the neuron holds alone); None where the model's
    structure cannot be read (by identity, whatever the attributes are called)."""
    value, neuron, layer = ns.get("Value"), ns.get("Neuron"), ns.get("Layer")
    if not all(isinstance(k, type) for k in (value, neuron, layer)):
        return None
    layers = [model] if isinstance(model, layer) else held(model, layer) if not isinstance(model, neuron) else []
    neurons = [[model]] if isinstance(model, neuron) else [held(la, neuron) for la in layers]
    where: dict[int, list[int]] = {}
    for li, row in enumerate(neurons):
        for ni, n in enumerate(row):
            try:
                attrs = list(vars(n).values())
            except TypeError:
                return None
            lists = [a for a in attrs if isinstance(a, (list, tuple)) and a and all(isinstance(v, value) for v in a)]
            alone = [a for a in attrs if isinstance(a, value)]
            if len(lists) != 1 or len(alone) != 1:
                return None
            for k, w in enumerate(lists[0]):
                where.setdefault(id(w), [li, ni, k])
            where.setdefault(id(alone[0]), [li, ni, -1])
    found = [where.get(id(p)) for p in params]
    return None if any(r is None for r in found) else found  # type: ignore[return-value]


def probe_layer(ns: Namespace, case: Case) -> Observation:
    """Layer(nin, nout): one Value when nout == 1, else a list of nout Values."""
    nin, nout = case["nin"], case["nouts"][0]
    layer = ns["Layer"](nin, nout)
    params = set_parameters(layer, case["weights"])
    shape = {"count": len(params), "kinds": _kinds(params, ns["Value"]), "held": _layer_shape(ns, layer),
             "roles": roles(ns, layer, params)}
    try:
        return {**shape, **_layer_outputs(ns, case, layer, params)}
    except LearnerError as exc:
        if shape["count"] == len(case["weights"]):
            raise
        return {**shape, "outputs": [], "output_error": exc.as_data(), "reach": 0, "single_is_value": True}


def _layer_outputs(ns: Namespace, case: Case, layer: Any, params: list[Any]) -> Observation:
    nin, nout = case["nin"], case["nouts"][0]
    outputs = []
    first = None
    for x in case["xs"]:
        out = layer(x)
        if nout == 1:
            outputs.append([read_output(out, "Layer(nin, 1)(x)")])
            outs = [out]
        else:
            if not isinstance(out, (list, tuple)) or len(out) != nout:
                raise LearnerError("layer_not_a_list", nin=nin, nout=nout, shown=short_repr(out))
            outs = list(out)
            outputs.append([read_output(o, "Layer(x)[i]") for o in outs])
        first = first or outs
    single = ns["Layer"](nin, 1)([0.5] * nin)
    reach = sum(_reach(o, params) for o in first or [])
    return {"outputs": outputs, "reach": reach, "output_error": None,
            "single_is_value": hasattr(single, "data") and not isinstance(single, (list, tuple))}


def probe_mlp(ns: Namespace, case: Case) -> Observation:
    """MLP(nin, nouts): parameter count, its output for weights set through parameters(), and the graph's reach."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = set_parameters(model, case["weights"])
    layers = held(model, ns["Layer"]) if isinstance(ns.get("Layer"), type) else []
    read, outs, error = _outputs(model, case["xs"], "MLP(x)")
    return {"count": len(params), "kinds": _kinds(params, ns["Value"]), "held": [_layer_shape(ns, la) for la in layers],
            "outputs": read, "output_error": error, "reach": _reach(outs[0], params) if not error else 0,
            "roles": roles(ns, model, params)}


def probe_loss(ns: Namespace, case: Case) -> Observation:
    """mse_loss on a fresh model: its value and every parameter's gradient after backward()."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = set_parameters(model, case["weights"])
    loss = ns["mse_loss"](model, case["xs"], case["ys"])
    data = read_output(loss, "mse_loss")
    loss.backward()
    return {"count": len(params), "data": data, "grads": [read_number(p.grad, "parameter.grad") for p in params],
            "reach": _reach(loss, params)}


def probe_train(ns: Namespace, case: Case) -> Observation:
    """train() from known starting weights: the losses it records."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = set_parameters(model, case["weights"])
    losses = ns["train"](model, case["xs"], case["ys"], case["steps"], case["lr"])
    try:
        items = list(losses)[: case["steps"] + 10]
    except TypeError:
        raise LearnerError("train_not_a_list", kind=type(losses).__name__) from None
    moved = any(read_number(p.data, "a parameter's data") != w for p, w in zip(params, case["weights"]))
    return {"count": len(params), "losses": [read_number(x, "a recorded loss") for x in items], "moved": moved}
