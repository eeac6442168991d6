"""The probe side (what runs next to learner code) holds no answer: it imports nothing of the grader's truth."""

import json
import subprocess
import sys

import pytest

from autograder import checks, probes

ANSWER_SIDE = ("autograder.checks", "autograder.truth", "autograder.catalog", "autograder.numeric",
               "autograder.expressions", "autograder.net_reference", "autograder.notebook", "autograder.settings")


def test_importing_the_probe_side_loads_no_answer_side_module():
    code = "import json, sys, autograder.probes; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert "autograder.probes" in loaded
    assert [m for m in loaded if m.startswith(ANSWER_SIDE)] == []


def test_no_module_is_shadowed_by_a_same_named_attribute():
    import autograder

    for name in ("check", "CheckFailed"):
        assert callable(getattr(autograder, name))
    import autograder.checks
    assert autograder.checks.__name__ == "autograder.checks"
    with pytest.raises(ModuleNotFoundError):
        __import__("autograder.check")


def test_every_check_has_its_needs_on_the_probe_side_and_only_its_own_targets():
    assert set(probes.NEEDS) == set(checks.BY_NAME)
    for c in checks.CHECKS:
        assert probes.NEEDS[c.name] == c.needs, c.name


def test_the_probe_side_needs_table_is_written_from_the_checks_declarations():
    from autograder.checks.registry import NEEDS_FILE, needs_source

    assert NEEDS_FILE.read_text() == needs_source(), "run `python -m autograder.checks` to rewrite probes/needs.py"


def test_the_probe_side_op_table_is_written_from_the_operations_declarations():
    from autograder.checks.registry import OP_TABLE_FILE, op_table_source

    assert OP_TABLE_FILE.read_text() == op_table_source(), "run `python -m autograder.checks` to rewrite probes/op_table.py"


def test_the_check_command_says_whether_the_generated_tables_are_up_to_date(tmp_path, monkeypatch):
    from autograder.checks import registry

    assert subprocess.run([sys.executable, "-m", "autograder.checks", "--check"], capture_output=True).returncode == 0
    stale = tmp_path / "op_table.py"
    stale.write_text("METHODS = {}\n")
    monkeypatch.setattr(registry, "GENERATED", ((stale, registry.op_table_source),))
    monkeypatch.setattr(sys, "argv", ["autograder.checks", "--check"])
    assert registry.main() == 1 and stale.read_text() == "METHODS = {}\n"  # --check compares, never writes
    monkeypatch.setattr(sys, "argv", ["autograder.checks"])
    assert registry.main() == 0 and stale.read_text() == registry.op_table_source()


def test_a_check_name_is_registered_once():
    from autograder.checks.registry import Topic, catalogue

    topic = Topic()
    topic.add(checks.CHECKS[0])
    with pytest.raises(ValueError, match="registered twice"):
        catalogue(topic, topic)


@pytest.mark.parametrize("hidden", [False, True])
def test_cases_are_plain_json_that_name_their_probe_and_carry_no_answer(hidden):
    for c in checks.CHECKS:
        for case in c.make_cases(hidden):
            assert json.loads(json.dumps(case)) == case
            assert case["probe"] in probes.PROBES
            assert not {"expected", "want", "answer", "reference"} & set(case), c.name


def test_a_course_secret_changes_hidden_cases_only_and_stably():
    c = checks.get("add_backward")
    assert c.make_cases(False, secret="s1") == c.make_cases(False)
    assert c.make_cases(True, secret="s1") == c.make_cases(True, secret=b"s1") != c.make_cases(True)
    assert c.make_cases(True, secret="s1") != c.make_cases(True, secret="s2")


def test_isolated_and_prerequisite_checks_exist():
    for c in checks.CHECKS:
        for name in (*c.isolate, *c.prerequisites):
            assert name in checks.BY_NAME and name != c.name


def _probe_error_keys() -> list[tuple[str, object]]:
    """Every error the probe side's source reports: the first argument of each LearnerError/LearnerTimeout call and
    each string stored under "error" (None where it is not a plain string)."""
    import ast
    from pathlib import Path

    found = []
    for path in sorted(Path(probes.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("LearnerError", "LearnerTimeout"):
                first = node.args[0] if node.args else None
                found.append((f"{path.name}:{node.lineno}", getattr(first, "value", None)))
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) and getattr(
                    node.targets[0].slice, "value", None) == "error":
                values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
                found += [(f"{path.name}:{node.lineno}", getattr(v, "value", None)) for v in values]
            elif isinstance(node, ast.Dict):  # an observation written out whole (a LearnerError's own key is above)
                found += [(f"{path.name}:{node.lineno}", v.value) for k, v in zip(node.keys, node.values)
                          if getattr(k, "value", None) == "error" and isinstance(v, ast.Constant)]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "update":
                found += [(f"{path.name}:{node.lineno}", getattr(k.value, "value", None)) for k in node.keywords
                          if k.arg == "error"]
    return found


def test_the_probe_side_reports_errors_as_keys_phrased_in_messages():
    """No sentence is written on the probe side: it reports a key and the facts, and checks/messages.py phrases it."""
    from autograder.checks.messages import PROBE_ERRORS

    found = _probe_error_keys()
    assert len(found) > 20
    assert [(where, key) for where, key in found if key not in PROBE_ERRORS] == []
    assert {key for _, key in found} == set(PROBE_ERRORS)


def test_an_error_key_or_facts_no_probe_sends_is_a_malformed_observation():
    from autograder.checks.base import ERROR
    from autograder.checks.messages import MALFORMED_OBSERVATION
    from autograder.checks.run import verdict
    from autograder.settings import Tolerance

    check = checks.get("add_forward")
    case = check.make_cases()[0]
    for obs in ({"error": "<b>forged</b>", "status": "error"}, {"error": "raised", "fields": {"exception": 1}},
                {"error": "raised", "fields": {}}):
        failure = verdict(check, case, obs, Tolerance())
        assert failure.misconception == MALFORMED_OBSERVATION and failure.status == ERROR, obs
