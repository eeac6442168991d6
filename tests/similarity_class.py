"""A synthetic class of the real workbook for the similarity report: independent learners and planted copies.

Every learner answers every solution cell of the six workbook notebooks. For each cell they pick a formulation, as
learners do: the reference solution, a correct alternative or a mistake of the notebook corpus
(tests/checks/notebook_corpus.py), or the method as one of the engine styles of tests/engines/ writes it. On top, each has
habits of their own that survive renaming (`x = x + ...` for `+=`, operands the other way round, a temporary for
`out.grad`, a `return` through a variable, debug prints, an extra assert), their own names for local variables, and
their own comments.

Planted among them, each pair known:
- verbatim: a learner's notebooks handed in again by another;
- renamed: every local name changed again, the code re-spaced;
- reordered: the functions and methods of each cell in another order, comments dropped and others written;
- ring: one learner's work copied by two others, each renamed (three pairs);
- micrograd: a learner who pasted micrograd's methods (read from the installed `micrograd` package at run time, never
  stored here) wherever the workbook asks for one, with their own code elsewhere: the pair (learner, the engine).

Everything is drawn from one `random.Random(seed)`: the same seed gives the same class, byte for byte.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import random
import re
import shutil
import textwrap
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from notebook_corpus import ALTERNATIVES, DIAGNOSED, MISTAKES, Variant

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "workbook"
RELEASE = ROOT / "notebooks" / "workbook"
ENGINES = ROOT / "tests" / "engines"
ASSIGNMENT = "workbook"
MICROGRAD = "micrograd 0.1.0 (package)"  # the name the report gives the package's engine
MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")
STYLE_ENGINES = ("composed_tanh", "depth_schedule", "identity_fancy", "iterative_stack", "kahn_slots", "module_zero_grad",
                 "no_coercion", "times_label")

# exercise -> the Value methods (or module-level functions and classes) its cell defines
DEFINES = {
    "ex_03_add": ["__add__"], "ex_03_mul": ["__mul__"], "ex_03_backward": ["backward"],
    "ex_04_tanh": ["tanh"], "ex_04_exp": ["exp"], "ex_04_pow": ["__pow__"], "ex_04_reflected": ["__radd__", "__rmul__"],
    "ex_04_neg_sub": ["__neg__", "__sub__", "__rsub__"], "ex_04_div": ["__truediv__"], "ex_04_rtruediv": ["__rtruediv__"],
    "ex_06_mse_loss": ["mse_loss"], "ex_06_train": ["train"],
    "ex_06_neuron": ["Neuron"], "ex_06_layer": ["Layer"], "ex_06_mlp": ["MLP"],
}
CLASSES = {"Neuron", "Layer", "MLP", "Module"}
FUNCTIONS = {"mse_loss", "train"}

NAMES = {  # a local name -> what else learners call it
    "out": ["result", "res", "o", "new", "y", "node"], "topo": ["order", "topo_order", "nodes", "ordering", "sorted_nodes"],
    "visited": ["seen", "done", "marked", "explored"], "child": ["c", "ch", "kid", "parent", "p"],
    "node": ["n", "v", "u", "item", "current"], "build": ["visit", "dfs", "walk", "build_topo", "topo_sort"],
    "t": ["th", "tanh_val", "y", "value"], "losses": ["history", "loss_log", "curve", "record"],
    "loss": ["l", "cost", "err", "objective"], "layer": ["lyr", "L", "l"], "leaves": ["vals", "xs_v", "nodes_in", "wrapped"],
    "sizes": ["sz", "dims", "widths", "shape"], "outs": ["outputs", "ys", "activations", "res"],
    "scale": ["denom", "m", "biggest", "norm"], "e": ["ex", "exp2x", "z", "u"], "k": ["n", "power", "exponent"],
    "other": ["rhs", "b", "that", "y"],
}
COMMENTS = ["# chain rule", "# accumulate, don't overwrite", "# local derivative times upstream", "# TODO check this",
            "# from the lecture", "# works!", "# gradient flows back", "# careful with the order", "# d/dx",
            "# topological sort first", "# wrap numbers", "# I think this is right", "# same as before", "# step"]
PRINTS = ['print("debug:", {v})', 'print({v})', 'print("here")', "# print({v})"]


@dataclass
class Learner:
    """One learner's answers: grade_id -> cell text, per notebook (file stem)."""

    id: str
    cells: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class SyntheticClass:
    """The learners and the planted pairs: (student, student) or (student, MICROGRAD)."""

    learners: list[Learner]
    planted: dict[tuple[str, str], str]  # sorted pair -> kind
    independent: set[str]  # learners who copied from no one and whom no one copied

    def write(self, course: Path) -> Path:
        """A course directory: source/, release/ and submitted/<id>/workbook/, and its nbgrader_config.py."""
        write_course(course, self.learners)
        return course


def solution_cells() -> dict[str, dict[str, str]]:
    """notebook stem -> grade_id -> the reference answer (markers dropped)."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution") and cell["cell_type"] == "code":
                src = "".join(cell["source"])
                out.setdefault(path.stem, {})[meta["grade_id"]] = "".join(
                    ln for ln in src.splitlines(keepends=True) if not MARKER.match(ln))
    return out


def _definitions(path: Path) -> dict[str, str]:
    """Top-level functions and classes, and Value's methods, of a .py file: name -> source (dedented)."""
    text = path.read_text()
    tree = ast.parse(text)
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.setdefault(node.name, ast.get_source_segment(text, node) or "")
        if isinstance(node, ast.ClassDef) and node.name == "Value":
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out[item.name] = textwrap.dedent(" " * item.col_offset + (ast.get_source_segment(text, item) or ""))
    return out


def micrograd_definitions() -> dict[str, str]:
    """micrograd's methods and classes as its package publishes them (None when it is not installed)."""
    spec = importlib.util.find_spec("micrograd")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the synthetic class needs the `micrograd` package (pip install 'autograd-workbook[similarity]')")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return {**_definitions(folder / "engine.py"), **_definitions(folder / "nn.py")}


def cell_from(defs: dict[str, str], exercise: str, with_module: bool = False) -> str | None:
    """The exercise's cell written from another engine's definitions (None when it lacks one)."""
    names = DEFINES.get(exercise, [])
    if not names or any(n not in defs for n in names):
        return None
    parts = [defs["Module"]] if with_module and "Module" in defs and names[0] in CLASSES else []
    parts += [defs[n] for n in names]
    attach = [f"Value.{n} = {n}" for n in names if n not in CLASSES and n not in FUNCTIONS]
    return "\n\n\n".join(parts) + ("\n\n\n" + "\n".join(attach) if attach else "") + "\n"


def menu(reference: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """grade_id -> every formulation a learner may start from: the reference, the corpus variants, engine styles."""
    out: dict[str, list[str]] = {gid: [text] for cells in reference.values() for gid, text in cells.items()}
    variants: list[Variant] = [*MISTAKES.values(), *ALTERNATIVES.values(), *(d.variant for d in DIAGNOSED.values())]
    for v in variants:
        text = out[v.cell][0]
        if all(text.count(old) == 1 for old, _ in v.subs):
            for old, new in v.subs:
                text = text.replace(old, new)
            out[v.cell].append(text)
    for name in STYLE_ENGINES:
        defs = _definitions(ENGINES / f"{name}.py")
        for gid in out:
            cell = cell_from(defs, gid)
            if cell is not None:
                out[gid].append(cell)
    return {gid: list(dict.fromkeys(texts)) for gid, texts in out.items()}


# ---------------------------------------------------------------- habits: edits of a cell that survive normalisation
IDENT = r"(?<![\w.]){}(?!\w)"


def rename(text: str, names: dict[str, str]) -> str:
    """Every local name in `names` changed (never an attribute after a dot, never inside a longer name)."""
    for old, new in names.items():
        text = re.sub(IDENT.format(re.escape(old)), new, text)
    return text


def expand_augmented(text: str) -> str:
    """`a.grad += x` -> `a.grad = a.grad + x`."""
    return re.sub(r"^(\s*)([\w.]+) \+= (.+)$", r"\1\2 = \2 + \3", text, flags=re.M)


def swap_products(text: str) -> str:
    """`a * b` -> `b * a` where both sides are plain names or attributes."""
    return re.sub(r"(?<![\w.*])([\w.]+) \* ([\w.]+)(?![\w.(*])", r"\2 * \1", text)


def upstream_temporary(text: str) -> str:
    """A `g = out.grad` line first in each `_backward`, and `g` for `out.grad` in it."""
    def one(m: re.Match[str]) -> str:
        indent, body = m.group(1), m.group(2)
        return f"{indent}def _backward():\n{indent}    g = out.grad\n" + body.replace("out.grad", "g")
    return re.sub(r"^( *)def _backward\(\):\n((?:\1    .*\n)+)", one, text, flags=re.M)


def return_through(text: str) -> str:
    """`return expr` -> `answer = expr` then `return answer`, for one-line returns of an expression."""
    return re.sub(r"^( +)return (?!out$|x$|losses$)(.+[)\]])$", r"\1answer = \2\n\1return answer", text, flags=re.M)


def add_prints(rng: random.Random, text: str) -> str:
    """A debug print after a random assignment line."""
    lines = text.splitlines()
    spots = [i for i, ln in enumerate(lines) if re.match(r"^ +\w+ = ", ln)]
    if not spots:
        return text
    i = rng.choice(spots)
    indent = re.match(r"^ *", lines[i]).group(0)
    var = lines[i].split("=")[0].strip()
    lines.insert(i + 1, indent + rng.choice(PRINTS).format(v=var))
    return "\n".join(lines) + "\n"


def add_assert(text: str) -> str:
    """An `assert isinstance(...)` at the top of each two-operand method."""
    return re.sub(r"^( *)def (__\w+__)\(self, other\):\n", r"\1def \2(self, other):\n\1    assert isinstance(other, (Value, int, float))\n",
                  text, flags=re.M)


def comment(rng: random.Random, text: str, rate: float) -> str:
    """Comments of the learner's own at the end of some lines."""
    return "\n".join(ln + ("  " + rng.choice(COMMENTS) if ln.strip() and rng.random() < rate and "#" not in ln else "")
                     for ln in text.splitlines()) + "\n"


def strip_comments(text: str) -> str:
    """Every `# ...` comment gone (found by Python's tokenizer, so a '#' inside a string stays)."""
    cuts: dict[int, int] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                cuts[tok.start[0]] = tok.start[1]
    except (tokenize.TokenError, SyntaxError):
        return text
    lines = text.splitlines()
    return "\n".join(ln[: cuts[i]].rstrip() if i in cuts else ln for i, ln in enumerate(lines, 1)) + "\n"


def respace(text: str) -> str:
    """Another spacing: no blank lines inside functions, a space after each comma doubled, ...: formatting only."""
    text = re.sub(r"\n\n\n+", "\n\n", text)
    text = re.sub(r",(?=\S)", ", ", text)
    return text.replace(" = ", "  =  ")


def reorder(rng: random.Random, text: str) -> str:
    """The cell's top-level definitions, and each class's methods, in another order (assignments stay last)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)

    def block(node: ast.AST) -> str:
        return "".join(lines[node.lineno - 1 - len(getattr(node, "decorator_list", [])): node.end_lineno])

    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    rest = [n for n in tree.body if n not in defs]
    out_defs = []
    for node in defs:
        src = block(node)
        if isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, ast.FunctionDef)]
            if len(methods) > 1:
                head = "".join(lines[node.lineno - 1: methods[0].lineno - 1])
                bodies = [block(m).rstrip("\n") + "\n" for m in methods]
                rng.shuffle(bodies)
                src = head + "\n".join(bodies)
        out_defs.append(src.rstrip("\n") + "\n")
    rng.shuffle(out_defs)
    return "\n\n".join(out_defs) + ("\n\n" + "".join(block(n) for n in rest) if rest else "")


@dataclass
class Habits:
    """What one learner does to every answer."""

    names: dict[str, str]
    edits: list[Callable[[str], str]]
    comment_rate: float
    prints: float


def habits(rng: random.Random) -> Habits:
    names = {k: rng.choice(v) for k, v in NAMES.items() if rng.random() < 0.6}
    names = {k: v for k, v in names.items() if v not in names}  # never two names onto one
    edits = [f for f, p in ((expand_augmented, 0.3), (swap_products, 0.35), (upstream_temporary, 0.25),
                            (return_through, 0.25), (add_assert, 0.15)) if rng.random() < p]
    return Habits(names, edits, rng.choice([0.0, 0.05, 0.15, 0.3]), rng.choice([0.0, 0.1, 0.25]))


def answer(rng: random.Random, h: Habits, options: list[str]) -> str:
    """One cell as this learner writes it: a formulation, their habits, their names and comments."""
    r = rng.random()
    text = options[0] if r < 0.35 or len(options) == 1 else rng.choice(options[1:])
    for edit in h.edits:
        if rng.random() < 0.8:  # a habit, not a law
            text = edit(text)
    if rng.random() < h.prints:
        text = add_prints(rng, text)
    return comment(rng, rename(text, h.names), h.comment_rate)


def independent_learner(rng: random.Random, ident: str, reference: dict[str, dict[str, str]],
                        options: dict[str, list[str]]) -> Learner:
    h = habits(rng)
    return Learner(ident, {nb: {gid: answer(rng, h, options[gid]) for gid in cells} for nb, cells in reference.items()})


def transformed(learner: Learner, ident: str, edit: Callable[[str], str]) -> Learner:
    return Learner(ident, {nb: {gid: edit(text) for gid, text in cells.items()} for nb, cells in learner.cells.items()})


def _safe(edit: Callable[[str], str]) -> Callable[[str], str]:
    """`edit`, or the text unchanged where the edit would not parse (a learner's syntax error stays theirs)."""
    def run(text: str) -> str:
        try:
            ast.parse(text)
        except SyntaxError:
            return text
        new = edit(text)
        try:
            ast.parse(new)
        except SyntaxError:
            return text
        return new
    return run


def renamed_copy(rng: random.Random, learner: Learner, ident: str) -> Learner:
    names = {k: rng.choice(v) + "_" for k, v in NAMES.items()}  # every local name changed, again
    return transformed(learner, ident, lambda t: respace(rename(t, names)))


def reordered_copy(rng: random.Random, learner: Learner, ident: str) -> Learner:
    return transformed(learner, ident, lambda t: comment(rng, _safe(lambda s: reorder(rng, s))(strip_comments(t)), 0.3))


def micrograd_paster(rng: random.Random, learner: Learner, mg: dict[str, str]) -> Learner:
    """`learner` with micrograd's code pasted wherever micrograd has the method (tanh for relu where it must be)."""
    out = Learner(learner.id, {nb: dict(cells) for nb, cells in learner.cells.items()})
    for cells in out.cells.values():
        for gid in cells:
            cell = cell_from(mg, gid, with_module=gid == "ex_06_neuron")
            if cell is not None:
                cells[gid] = cell.replace(".relu()", ".tanh()")
    return out


def make_class(students: int, seed: int = 0, per_kind: int | None = None) -> SyntheticClass:
    """`students` learners; `per_kind` planted copies of each kind (default: one per 50 learners, at least one)."""
    rng = random.Random(seed)
    reference = solution_cells()
    options = menu(reference)
    per_kind = per_kind if per_kind is not None else max(1, students // 50)
    kinds = ["verbatim", "renamed", "reordered"]
    copies = per_kind * len(kinds) + 2 * per_kind  # and per_kind rings of three (two copies each)
    originals = students - copies
    if originals < 2 * per_kind * (len(kinds) + 2):
        raise ValueError(f"{students} learners are too few for {per_kind} planted copies of each kind")
    width = len(str(students))
    learners = [independent_learner(rng, f"s{i:0{width}d}", reference, options) for i in range(originals)]
    sources = rng.sample(range(originals), per_kind * (len(kinds) + 2))
    planted: dict[tuple[str, str], str] = {}
    n = originals
    for j, kind in enumerate(kinds):
        for src in sources[j * per_kind:(j + 1) * per_kind]:
            ident = f"s{n:0{width}d}"
            n += 1
            a = learners[src]
            copy = {"verbatim": lambda a, i: transformed(a, i, lambda t: t), "renamed": lambda a, i: renamed_copy(rng, a, i),
                    "reordered": lambda a, i: reordered_copy(rng, a, i)}[kind](a, ident)
            learners.append(copy)
            planted[tuple(sorted((a.id, ident)))] = kind
    for src in sources[len(kinds) * per_kind:(len(kinds) + 1) * per_kind]:
        a, ring = learners[src], [learners[src].id]
        for _ in range(2):
            ident = f"s{n:0{width}d}"
            n += 1
            learners.append(renamed_copy(rng, a, ident))
            ring.append(ident)
        for x in range(3):
            for y in range(x + 1, 3):
                planted[tuple(sorted((ring[x], ring[y])))] = "ring"
    mg = micrograd_definitions()
    for src in sources[(len(kinds) + 1) * per_kind:]:
        learners[src] = micrograd_paster(rng, learners[src], mg)
        planted[(learners[src].id, MICROGRAD)] = "micrograd"
    involved = {x for pair in planted for x in pair}
    order = rng.sample(learners, len(learners))  # copies are not next to their source
    return SyntheticClass(order, planted, {x.id for x in learners if x.id not in involved})


CONFIG = '''c = get_config()
c.CourseDirectory.course_id = "synthetic"
c.CourseDirectory.root = {root!r}
'''


def write_course(course: Path, learners: list[Learner]) -> None:
    """source/ (the solutions), release/ (the released notebooks), and every learner's notebooks in submitted/."""
    course.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SOLUTIONS, course / "source" / ASSIGNMENT, dirs_exist_ok=True)
    shutil.copytree(RELEASE, course / "release" / ASSIGNMENT, dirs_exist_ok=True)
    (course / "nbgrader_config.py").write_text(CONFIG.format(root=str(course)))
    released = {p.stem: json.loads(p.read_text()) for p in sorted(RELEASE.glob("*.ipynb"))}
    for learner in learners:
        folder = course / "submitted" / learner.id / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        for stem, nb in released.items():
            answers = learner.cells.get(stem, {})
            cells = []
            for cell in nb["cells"]:
                gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                cells.append({**cell, "source": answers[gid]} if gid in answers else cell)
            (folder / f"{stem}.ipynb").write_text(json.dumps({**nb, "cells": cells}, indent=1))
