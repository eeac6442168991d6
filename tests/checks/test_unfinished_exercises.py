"""A stub is "not implemented" (issue 34), never a dependency message: in its check cell, in Validate's dialog, in
the feedback's HTML, in the summary and in `python -m autograder check`, for every exercise of every notebook left as
the released notebook has it, while every other exercise holds one of its known mistakes (or is solved)."""

from __future__ import annotations

import pytest
from notebook_corpus import SOURCE, exercises, graded_cells, known_mistakes, stub, with_variants

from autograder import cli
from autograder.checks import NOT_IMPLEMENTED
from autograder.notebook import CheckFailed, check_outputs, verdict_text
from autograder.workbook import summary_text

STUBS = [(ex.notebook, ex.cell) for name in sorted(p.stem for p in SOURCE.glob("*.ipynb"))
         for ex in exercises(name) if ex.grade_cells]
SAYS = ("not implemented yet", "not done yet")  # the hand-filled grads of notebook 2 are filled, not implemented
DEPENDENCY = ("pass first", "same cause", "fails because of")


def says_unfinished(text: str) -> bool:
    return any(s in text for s in SAYS) and not any(s in text for s in DEPENDENCY)


def notebook_with_a_stub(name: str, cell: str, round_: int):
    """Exercise `cell` as released (its stub); the others solved (round 0), all stubs too (round 1: the released
    notebook itself, where 03's backward() said "needs `Value.__mul__` to pass first"), or each holding its
    (k-2)-th known mistake (round k >= 2)."""
    if round_ == 1:
        others = [stub(name, ex.cell) for ex in exercises(name) if ex.cell != cell]
    else:
        others = [] if round_ == 0 else [ms[(round_ - 2) % len(ms)] for ex in exercises(name)
                                         if ex.cell != cell and (ms := known_mistakes(name, ex.cell))]
    return with_variants(name, [stub(name, cell), *others])


@pytest.mark.parametrize("round_", [0, 1, 2])
@pytest.mark.parametrize(("name", "cell"), STUBS, ids=[c for _, c in STUBS])
def test_a_stub_is_not_implemented_wherever_its_check_is_shown(name, cell, round_, tmp_path, capsys):
    nb = notebook_with_a_stub(name, cell, round_)
    grades = graded_cells(nb)
    ex = next(e for e in exercises(name) if e.cell == cell)
    for gid in ex.grade_cells:
        results = grades[gid]
        assert results and all(r.status == NOT_IMPLEMENTED for r in results), [(r.name, r.message) for r in results]
        shown = verdict_text(results, hidden=False)  # the check cell
        assert all(says_unfinished(ln) for ln in shown.splitlines() if ln.startswith("✗ ")), shown
        validate = "\n".join(CheckFailed(results)._render_traceback_())  # nbgrader's Validate dialog
        assert says_unfinished(validate), validate
        html = check_outputs(results, hidden=False)[0]["data"]["text/html"]  # what the feedback page shows
        assert says_unfinished(html), html
        summary = summary_text([(1.0, results)], {r.name: False for r in results})  # the summary's rows
        rows = [ln for ln in summary.splitlines() if "✗ " in ln or "⋯ " in ln]  # an unfinished one is a quiet ⋯ line
        assert rows and all(says_unfinished(ln) for ln in rows), summary
    import nbformat

    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    capsys.readouterr()
    assert cli.main(["check", str(path)]) == 1  # `python -m autograder check`
    out = capsys.readouterr().out
    for gid in ex.grade_cells:
        for r in grades[gid]:
            line = next(ln for ln in out.splitlines() if ln.startswith(f"✗ {r.name}: "))
            assert says_unfinished(line), line
