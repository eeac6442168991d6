"""Each exercise is judged apart (issue 34): whatever one exercise of a notebook holds (any known mistake of the
corpus, or its stub), every other exercise's grade cells earn their full points when it is correct, and show its own
diagnosis when it holds a mistake of its own.

The only exception is declared: an exercise made of another (a Layer of the learner's Neurons, an MLP of their
Layers; the notebook says so above it, and the check's `prerequisites` say so to the grader), whose check then says
which method must pass first. The notebooks run in-process (the nbgrader cells only, as nbgrader scores them);
tests/workbook/test_workbook_notebooks.py runs a sample through real nbgrader.
"""

from __future__ import annotations

import functools

import nbformat
import pytest
from notebook_corpus import (
    MARKERS,
    SOURCE,
    Exercise,
    Variant,
    check_calls,
    exercises,
    grade_id,
    graded_cells,
    known_mistakes,
    stub,
    with_variants,
)

from autograder import checks

NOTEBOOKS = sorted(p.stem for p in SOURCE.glob("*.ipynb"))
EXERCISES = [(ex.notebook, ex.cell) for name in NOTEBOOKS for ex in exercises(name)]


@functools.cache
def checks_in(name: str, cell: str) -> tuple[str, ...]:
    """The checks a grade cell of the solution notebook calls."""
    nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    source = next(c.source for c in nb.cells if grade_id(c) == cell)
    source = "\n".join(ln for ln in source.splitlines() if ln.strip() not in MARKERS)
    return tuple(dict.fromkeys(n for names, _ in check_calls(source) for n in names))


@functools.cache
def owner(name: str) -> dict[str, Exercise]:
    """The exercise whose grade cells call each check."""
    return {check: ex for ex in exercises(name) for gid in ex.grade_cells for check in checks_in(name, gid)}


def made_of(check: str) -> set[str]:
    """Every check `check` is declared to be made through (its prerequisites, and theirs)."""
    seen: set[str] = set()
    todo = list(checks.get(check).prerequisites)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(checks.get(name).prerequisites)
    return seen


def declared_through(name: str, check: str, cell: str) -> bool:
    """Whether `check` is declared to be made of the exercise `cell` (a Layer of the learner's Neurons)."""
    owners = owner(name)
    return any(owners[p].cell == cell for p in made_of(check) if p in owners)


def methods(name: str, cell: str) -> set[str]:
    """The learner functions the grade cells of exercise `cell` judge."""
    ex = next(e for e in exercises(name) if e.cell == cell)
    return {t for gid in ex.grade_cells for c in checks_in(name, gid) for t in checks.get(c).own_methods}


def variants_of(name: str, cell: str) -> list[Variant]:
    """The stub, then every known mistake of the exercise."""
    return [stub(name, cell), *known_mistakes(name, cell)]


def test_the_cross_test_covers_every_notebook_and_enough_mistakes():
    graded = [(n, c) for n, c in EXERCISES if next(e for e in exercises(n) if e.cell == c).grade_cells]
    assert {n for n, _ in graded} == set(NOTEBOOKS) and len(graded) >= 20
    assert sum(len(known_mistakes(n, c)) for n, c in graded) >= 100
    assert [(n, c) for n, c in graded if not known_mistakes(n, c)] == []


@pytest.mark.parametrize(("name", "cell"), EXERCISES, ids=[c for _, c in EXERCISES])
def test_every_other_exercise_keeps_its_points_whatever_this_one_holds(name, cell):
    """A holds its stub or a known mistake, every other exercise B is correct: B's grade cells earn full points,
    visible and hidden inputs, unless B is declared to be made of A (then it names A's method as the one to fix)."""
    others = [ex for ex in exercises(name) if ex.cell != cell]
    for variant in variants_of(name, cell):
        grades = graded_cells(with_variants(name, [variant]))
        for b in others:
            for gid in b.grade_cells:
                for r in grades[gid]:
                    if r.passed:
                        continue
                    where = (variant.misconception, gid, r.name, r.message[:300])
                    assert declared_through(name, r.name, cell), where
                    assert r.culprit in methods(name, cell) and "pass first" in r.message, where


def rotated(name: str, a_cell: str, round_: int) -> list[Variant]:
    """A mistake in every exercise but `a_cell` that has one, the k-th of each in round k. An exercise others are
    made of (Neuron, Layer) holds one only in odd rounds, so that the even ones show those others' own diagnoses."""
    made_of_others = {owner(name)[p].cell for c in owner(name) for p in made_of(c) if p in owner(name)}
    chosen = []
    for ex in exercises(name):
        mistakes = known_mistakes(name, ex.cell)
        if ex.cell == a_cell or not mistakes or not ex.grade_cells:
            continue
        if ex.cell in made_of_others and round_ % 2 == 0:
            continue
        chosen.append(mistakes[round_ % len(mistakes)])
    return chosen


@pytest.mark.parametrize(("name", "cell"), EXERCISES, ids=[c for _, c in EXERCISES])
def test_every_other_exercise_shows_its_own_diagnosis_whatever_this_one_holds(name, cell):
    """A holds its stub or a known mistake, every other exercise B a mistake of its own: B's grade cells show B's
    diagnosis (its misconception, its method), never A's, unless B is made of an exercise that holds a mistake."""
    for k, variant in enumerate(variants_of(name, cell)):
        others = rotated(name, cell, k)
        grades = graded_cells(with_variants(name, [variant, *others]), hidden=False)  # the diagnoses a learner reads
        holding = {cell, *(v.cell for v in others)}
        for b in others:
            ex = next(e for e in exercises(name) if e.cell == b.cell)
            results = [r for gid in ex.grade_cells for r in grades[gid]]
            failed = [r for r in results if not r.passed]
            where = (variant.misconception, b.misconception, [(r.name, r.misconception, r.message[:200]) for r in failed])
            own = [r for r in failed if r.misconception == b.misconception]
            if not own:  # only where it is made of an exercise that holds a mistake: it names the method to fix first
                blocked = [r for r in failed if any(declared_through(name, r.name, c) for c in holding - {b.cell})]
                assert blocked and all("pass first" in r.message for r in blocked), where
                continue
            assert b.method.split(".")[-1] in own[0].message, where
            assert not any(r.culprit in methods(name, cell) - methods(name, b.cell) for r in failed), where
