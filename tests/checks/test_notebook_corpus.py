"""Every notebook-level mistake fails first at the check cell right under its exercise, naming the method and the
misconception; every correct alternative keeps every point; no notebook with a bug prints "done"."""

from __future__ import annotations

import nbformat
import pytest
from notebook_corpus import ALTERNATIVES, DIAGNOSED, MISTAKES, SOURCE, grade_id, notebook, run, summary_problems

from autograder.checks import ERROR, FAILED
from autograder.checks.messages import hint, recovered_line

pytestmark = pytest.mark.slow


def test_the_corpus_is_large_enough():
    assert len(MISTAKES) >= 40 and len(ALTERNATIVES) >= 15
    assert len({m.misconception for m in MISTAKES.values()}) >= 35


@pytest.mark.parametrize("name", sorted(p.stem for p in SOURCE.glob("*.ipynb")))
def test_the_harness_runs_every_cell_of_the_solutions_without_error(name):
    """Demo cells that draw (plot_*, draw_graph, plt) run too, or a later demo needing their names would fail."""
    nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    ran = run(nb)
    assert ran.errors == {}
    assert "this notebook is done" in ran.summary, ran.summary


def check_cell_under(nb, cell: str) -> str:
    """The grade_id of the first grade cell after the solution cell `cell`."""
    ids = [grade_id(c) for c in nb.cells]
    after = ids.index(cell)
    return next(grade_id(c) for c in nb.cells[after + 1:]
                if c.get("metadata", {}).get("nbgrader", {}).get("grade") and not c.metadata.nbgrader.get("solution"))


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_mistake_fails_first_under_its_exercise_naming_method_and_misconception(name):
    variant = MISTAKES[name]
    nb = notebook(variant)
    ran = run(nb)
    under = check_cell_under(nb, variant.cell)
    first = next((gid, visible) for gid, visible, _ in ran.grades if not all(r.passed for r in visible))
    assert first[0] == under, f"first failure at {first[0]}, expected {under}: {[r.message for r in first[1]][:1]}"
    failed = [r for r in first[1] if not r.passed]
    diagnosed = [r for r in failed if r.misconception == variant.misconception]
    assert diagnosed, [(r.name, r.misconception, r.message[:300]) for r in failed]
    message = diagnosed[0].message
    # the recovered formula, where there is one, is shown in place of the catalogue's sentence
    sentence = recovered_line(diagnosed[0].recovered).strip() if diagnosed[0].recovered else hint(variant.misconception, "a")
    assert variant.method in message and sentence in message, message
    assert "done" not in ran.summary, ran.summary
    assert summary_problems(ran.summary) == []  # every failing row carries its sentence; nothing left dangling
    # every failed check (not a stub) carries an id and its sentence, however far down the notebook
    for gid, visible, hidden in ran.grades:
        for r in visible + hidden:
            if r.status in (FAILED, ERROR):
                assert r.misconception and hint(r.misconception, "a"), (gid, r.name, r.message[:300])


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_correct_alternative_keeps_every_point_and_the_notebook_is_done(name):
    ran = run(notebook(ALTERNATIVES[name]))
    failed = [(gid, r.name, r.message[:300]) for gid, visible, hidden in ran.grades for r in visible + hidden
              if not r.passed]
    assert failed == []
    assert ran.errors == {}  # a correct alternative breaks no demo cell either
    assert "this notebook is done" in ran.summary, ran.summary


@pytest.mark.parametrize("name", sorted(DIAGNOSED))
def test_unlisted_mistake_is_diagnosed_with_its_cause_and_nothing_misleading(name):
    """Issue 21's classes: the first failure stands under the exercise, names the method and its misconception (or
    shows the learner's formula, recovered from the numbers, beside the right one), shows what the entry asks, and no
    fallback, bare 'raised' or listed misleading sentence appears in that cell's diagnoses."""
    entry = DIAGNOSED[name]
    variant = entry.variant
    nb = notebook(variant)
    ran = run(nb)
    under = check_cell_under(nb, variant.cell)
    first = next((gid, visible) for gid, visible, _ in ran.grades if not all(r.passed for r in visible))
    assert first[0] == under, f"first failure at {first[0]}, expected {under}: {[r.message for r in first[1]][:1]}"
    failed = [r for r in first[1] if not r.passed]
    diagnosed = [r for r in failed if r.misconception == variant.misconception]
    assert diagnosed, [(r.name, r.misconception, r.message[:300]) for r in failed]
    message = diagnosed[0].message
    sentence = recovered_line(diagnosed[0].recovered).strip() if diagnosed[0].recovered else hint(variant.misconception, "a")
    assert variant.method.split(".")[-1] in message and sentence in message, message
    for fragment in entry.shows:
        assert fragment in message, (fragment, message)
    for r in failed:
        for fragment in (*entry.never, "the numbers are not yet right", hint("common.raised")):
            assert fragment not in r.message, (fragment, r.name, r.message)


def test_the_unlisted_mistakes_are_many_and_none_is_a_catalogue_entry():
    assert len(DIAGNOSED) >= 40
    listed = {(m.notebook, m.cell, m.subs) for m in MISTAKES.values()}
    assert not any((d.variant.notebook, d.variant.cell, d.variant.subs) in listed for d in DIAGNOSED.values())
    assert len({d.variant.misconception for d in DIAGNOSED.values()}) >= 30
