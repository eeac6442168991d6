"""Hint levels (settings.Hints.level): a ✗ names the misconception and shows what the learner's code computed, and
writes the solution only where the course (or, in a learner's own kernel, the notebook) allows it.

The part of a sentence that writes the solution is marked in its template (messages.SOLUTION_OPEN/CLOSE); these
tests hold every marked part to the level, and every sentence to the workbook's own solution code, so a solution
written out unmarked is found."""

from __future__ import annotations

import ast
import json
import pickle
import re
import tempfile
from pathlib import Path

import nbformat
import pytest
from mistakes import REFERENCE, substituted

from autograder import notebook
from autograder.checks import messages as msg
from autograder.cli import check_file
from autograder.settings import Hints, Limits, Tolerance

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = {**{f"MISCONCEPTIONS[{k!r}]": v for k, v in msg.MISCONCEPTIONS.items()},
             **{f"MANUAL_RULES[{k!r}]": v for k, v in msg.MANUAL_RULES.items()}, "RECOVERED": msg.RECOVERED}
MARKED = {name: t for name, t in TEMPLATES.items() if msg.solution_parts(t)}


def test_many_templates_mark_a_solution_part_and_the_default_is_the_misconception_level():
    assert len(MARKED) > 60
    assert Hints().level == "misconception" == msg.current_level()


@pytest.mark.parametrize("name", sorted(MARKED))
def test_a_solution_part_is_shown_only_at_the_solution_level(name):
    template = MARKED[name]
    hidden, shown = msg.at_level(template, "misconception"), msg.at_level(template, "solution")
    for part in msg.solution_parts(template):
        assert not writes(hidden, part.strip(" ,;:")), (part, hidden)
        assert part in shown
    assert msg.SOLUTION_OPEN not in hidden + shown and msg.SOLUTION_CLOSE not in hidden + shown
    assert hidden.strip() and not hidden.rstrip().endswith((":", ",", ";"))  # still a sentence


def writes(text: str, code: str) -> bool:
    """Whether `text` holds `code` as a whole (not as the start of a longer call, such as `_backward()` for
    `_backward`), spaces ignored."""
    squeezed, code = text.replace(" ", ""), code.replace(" ", "")
    return re.search(rf"(?<![\w.]){re.escape(code)}(?![\w(])", squeezed) is not None


def _solution_expressions() -> set[str]:
    """Every expression (with an operator, 7 characters or more once spaces are gone) and every statement of the
    workbook's solution code, spaces removed."""
    found: set[str] = set()
    for path in (ROOT / "solutions" / "workbook").glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            text = cell.source
            for block in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", text, re.S):
                lines = [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("#")]
                for line in lines:
                    found.add(line.replace(" ", ""))
                    try:
                        tree = ast.parse(line.removeprefix("return ").rstrip(":"))
                    except SyntaxError:
                        continue
                    for node in ast.walk(tree):
                        if isinstance(node, (ast.BinOp, ast.Compare, ast.ListComp, ast.GeneratorExp, ast.AugAssign,
                                             ast.Assign)):
                            found.add(ast.unparse(node).replace(" ", ""))
    return {t for t in found if len(t) >= 7 and re.search(r"[-+*/=<>\[]", t)}


def test_no_sentence_writes_the_workbook_solution_at_the_misconception_level():
    """The safety net under the markup: a sentence that writes a line or a sub-expression of the solutions' code
    without marking it fails here."""
    solution = _solution_expressions()
    assert len(solution) > 40 and "(f(x+h)-f(x-h))/(2*h)" in solution and "p.data-=lr*p.grad" in solution
    leaks = [(name, expr) for name, t in TEMPLATES.items() for expr in solution
             if writes(msg.at_level(t, "misconception"), expr)]
    assert leaks == []
    # and the markup is what hides them: at the solution level, some sentence writes most solution lines
    shown = " ".join(msg.at_level(t, "solution") for t in TEMPLATES.values())
    assert sum(writes(shown, e) for e in solution) >= 15


# ---------------------------------------------------------------- the level reaches every place a diagnosis is made

TANH_SLIP = ("(1 - t**2) * out.grad", "(1 - t) ** 2 * out.grad")


def _graded(config: str | None) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "engine.py"
        path.write_text(substituted(REFERENCE, (TANH_SLIP,)))
        cfg = None
        if config is not None:
            cfg = Path(tmp) / "nbgrader_config.py"
            cfg.write_text(f"c = get_config()\n{config}\n")
        return [r for r in check_file(str(path), str(cfg) if cfg else None) if not r.passed]


def test_the_command_line_check_shows_the_learners_formula_and_keeps_the_solution_out_by_default():
    failed = _graded(None)
    tanh = next(r for r in failed if r.recovered)
    assert "`(1 - t)**2 * g`" in tanh.message and "it should be" not in tanh.message
    assert "(1 - t**2) * g" not in tanh.message


def test_the_course_config_can_allow_the_solution():
    tanh = next(r for r in _graded('c.Hints.level = "solution"') if r.recovered)
    assert "`(1 - t)**2 * g`" in tanh.message and "it should be `(1 - t**2) * g`" in tanh.message


def test_a_level_that_does_not_exist_is_refused():
    with pytest.raises(Exception, match="level"):
        Hints(level="answers")
    with pytest.raises(ValueError, match="unknown hint level"), msg.hint_level("answers"):
        pass


def test_the_batch_graders_shared_settings_carry_the_level_to_its_workers_and_its_fingerprint():
    from autograder.grading.discover.fingerprint import settings_values
    from autograder.grading.grade.pipeline import Shared

    shared = Shared({}, Limits(), Tolerance(), None, None, "solution")
    assert pickle.loads(pickle.dumps(shared)).hints == "solution"
    assert settings_values(Limits()) == settings_values(Limits(), hints="misconception")
    assert settings_values(Limits(), hints="solution") != settings_values(Limits())


# ---------------------------------------------------------------- a learner's kernel: notebook metadata, course config

@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty course folder as the kernel's working directory, with no config anywhere it looks."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AUTOGRADER_CONFIG", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setattr(notebook, "_config_files", lambda real=notebook._config_files: [
        p for p in real() if str(p).startswith(str(tmp_path))])
    return tmp_path


def _notebook_with(folder: Path, hints: str | None) -> None:
    nb = nbformat.v4.new_notebook()
    if hints:
        nb.metadata["autograder"] = {"hints": hints}
    (folder / "01.ipynb").write_text(json.dumps(nb))


def test_a_learners_kernel_follows_the_default_then_the_course_config_then_the_notebooks_metadata(folder, monkeypatch):
    assert notebook.hint_level_here() == "misconception"
    (folder / "nbgrader_config.py").write_text('c = get_config()\nc.Hints.level = "solution"\n')
    assert notebook.hint_level_here() == "solution"
    _notebook_with(folder, "misconception")
    monkeypatch.setenv("JPY_SESSION_NAME", "course/01.ipynb")  # relative to the server's root; found beside the kernel
    assert notebook.hint_level_here() == "misconception"


def test_a_graded_run_ignores_the_submissions_metadata(folder, monkeypatch):
    _notebook_with(folder, "solution")
    monkeypatch.setenv("JPY_SESSION_NAME", str(folder / "01.ipynb"))
    assert notebook.hint_level_here() == "solution"
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    assert notebook.hint_level_here() == "misconception"


def test_a_broken_config_or_notebook_leaves_the_default(folder, monkeypatch):
    (folder / "nbgrader_config.py").write_text("c = get_config(\n")
    (folder / "01.ipynb").write_text("{not json")
    monkeypatch.setenv("JPY_SESSION_NAME", "01.ipynb")
    assert notebook.hint_level_here() == "misconception"


def test_check_in_a_kernel_phrases_at_the_kernels_level(folder, monkeypatch, capsys):
    from mistakes import REFERENCE as ref

    from autograder.loader import load

    path = folder / "engine.py"
    path.write_text(substituted(ref, (TANH_SLIP,)))
    ns = load(path).namespace
    for level, shows in (("misconception", False), ("solution", True)):
        monkeypatch.setattr(notebook, "hint_level_here", lambda level=level: level)
        with pytest.raises(notebook.CheckFailed) as failed:
            notebook.check("tanh_backward", ns=ns)
        assert ("it should be `(1 - t**2) * g`" in failed.value.results[0].message) is shows
        assert "`(1 - t)**2 * g`" in failed.value.results[0].message
    capsys.readouterr()


def test_the_instructors_class_report_reads_each_sentence_whole_with_no_markup():
    from types import SimpleNamespace

    from autograder.grading.outputs.misconceptions import common_misconceptions

    row = SimpleNamespace(student="s1", notebook="06_neural_net", misconceptions=("train.ascends",))
    sentence = common_misconceptions([row])[0].sentence
    assert "p.data -= lr * p.grad" in sentence and msg.SOLUTION_OPEN not in sentence
