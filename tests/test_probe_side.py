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
        assert set(probes.NEEDS[c.name]) <= set(c.targets), c.name


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
