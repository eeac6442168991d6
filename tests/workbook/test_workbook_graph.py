"""draw_graph: the rendered SVG holds every value (label, data, grad), every op and every edge."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET

import pytest
from engine_corpus import ENGINES

from autograder.probes.safe import LearnerError
from autograder.workbook import draw_graph

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def Value():
    spec = importlib.util.spec_from_file_location("reference_engine", ENGINES / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Value


def parse(svg: str) -> tuple[dict[str, tuple[list[str], tuple[float, float, float, float]]], dict[str, str], list]:
    """Value boxes {id: (texts, (x, y, w, h))}, ops {id: text}, edges [(from, to, start, end)] from the SVG text."""
    root = ET.fromstring(svg)
    values, ops, edges = {}, {}, []
    for g in root.iter(f"{SVG}g"):
        texts = [t.text for t in g.iter(f"{SVG}text")]
        if g.get("class") == "value":
            r = g.find(f"{SVG}rect")
            values[g.get("id")] = (texts, tuple(float(r.get(k)) for k in ("x", "y", "width", "height")))
        elif g.get("class") == "op":
            c = g.find(f"{SVG}circle")
            ops[g.get("id")] = (texts[0], (float(c.get("cx")), float(c.get("cy")), float(c.get("r"))))
    for p in root.iter(f"{SVG}path"):
        if p.get("class") == "edge":
            nums = [float(t) for t in p.get("d").split() if t not in ("M", "C", "L")]
            edges.append((p.get("data-from"), p.get("data-to"), (nums[0], nums[1]), (nums[-2], nums[-1])))
    return values, ops, edges


def on_box_side(point, box, side):
    x, y = point
    if len(box) == 3:  # an op circle: cx, cy, r
        cx, cy, r = box
        return abs(x - (cx + r if side == "right" else cx - r)) < 0.5 and abs(y - cy) < 0.5
    bx, by, w, h = box
    edge_x = bx + w if side == "right" else bx
    return abs(x - edge_x) < 0.5 and by <= y <= by + h


def test_graph_picture_shows_every_value_op_and_edge(Value):
    a, b, c, f = Value(2.0, label="a"), Value(-3.0, label="b"), Value(10.0, label="c"), Value(-2.0, label="f")
    e = a * b
    e.label = "e"
    d = e + c
    d.label = "d"
    L = d * f
    L.label = "L"
    L.backward()
    svg = draw_graph(L)._repr_svg_()
    values, ops, edges = parse(svg)

    shown = {texts[0]: texts[1:] for texts, _ in values.values()}
    for node in (a, b, c, f, e, d, L):
        assert shown[node.label] == [f"data {node.data:.4f}", f"grad {node.grad:.4f}"]
    assert len(values) == 7
    assert sorted(text for text, _ in ops.values()) == ["*", "*", "+"]

    label_of = {k: v[0][0] for k, v in values.items()}
    op_of = {k: v[0] for k, v in ops.items()}
    # every edge named by what it joins: value -> op, op -> value
    named = set()
    for src, dst, start, end in edges:
        if src in values:
            assert dst in ops
            assert on_box_side(start, values[src][1], "right") and on_box_side(end, ops[dst][1], "left")
            named.add((label_of[src], op_of[dst]))
        else:
            assert src in ops and dst in values
            assert on_box_side(start, ops[src][1], "right") and on_box_side(end, values[dst][1], "left")
            named.add((op_of[src], label_of[dst]))
    assert len(edges) == 9
    assert named == {("a", "*"), ("b", "*"), ("*", "e"), ("e", "+"), ("c", "+"), ("+", "d"),
                     ("d", "*"), ("f", "*"), ("*", "L")}
    # the op that makes e takes a and b, the op that makes L takes d and f
    producer = {label_of[dst]: src for src, dst, *_ in edges if dst in values}
    inputs = {}
    for src, dst, *_ in edges:
        if dst in ops:
            inputs.setdefault(dst, set()).add(label_of[src])
    assert inputs[producer["e"]] == {"a", "b"}
    assert inputs[producer["d"]] == {"e", "c"}
    assert inputs[producer["L"]] == {"d", "f"}


def test_graph_picture_keeps_equal_data_nodes_apart_and_draws_reuse_once(Value):
    x = Value(1.5, label="x")
    twin1, twin2 = x * 2.0, x * 2.0  # equal data, distinct nodes
    out = twin1 + twin2 * x
    out.backward()
    values, ops, edges = parse(draw_graph(out).svg)
    assert len(values) == 7  # x, two 2.0 leaves, two twins, twin2 * x, out
    assert len(ops) == 4
    assert len(edges) == 4 + 2 + 2 + 2 + 2  # op -> result, then each op's distinct inputs


def test_graph_picture_escapes_labels_and_survives_odd_data(Value):
    a = Value(1.0, label="<a & b>")
    b = Value("not a number", label="b")
    b._prev = {a}
    b._op = "weird"
    values, ops, _ = parse(draw_graph(b).svg)
    assert sorted(t[0][0] for t in values.values()) == ["<a & b>", "b"]
    assert any("not a number" in t[0][1] for t in values.values())
    assert [t for t, _ in ops.values()] == ["weird"]


def test_graph_picture_refuses_a_graph_too_big_to_read(Value):
    y = Value(1.0)
    for _ in range(400):
        y = y + 1.0
    with pytest.raises(LearnerError, match="too big"):
        draw_graph(y)
