"""The settings a grade depends on are read from the traits themselves: every configurable trait of `Limits` is a
setting of each notebook's dependency record (a new one too, with no list to keep), and every tolerance trait is part
of the digest of each check it judges, and of that check alone when set for one check (`Tolerance.checks`)."""

from __future__ import annotations

import pytest
from traitlets import Float

from autograder import checks
from autograder.grading.discover.fingerprint import settings_values
from autograder.grading.store.dependencies import Digests
from autograder.settings import Limits, Tolerance


@pytest.mark.parametrize("name", Limits.class_trait_names(config=True))
def test_every_configurable_limit_is_a_setting_of_the_record(name: str) -> None:
    limits = Limits()
    before = settings_values(limits)
    setattr(limits, name, getattr(limits, name) * 2)
    assert settings_values(limits) != before and settings_values(limits)[f"Limits.{name}"] == getattr(limits, name)


def test_a_trait_added_to_limits_counts_with_no_other_edit() -> None:
    class Declared(Limits):
        extra_seconds = Float(3.0, help="a new limit").tag(config=True)

    assert settings_values(Declared()) == {**settings_values(Limits()), "Limits.extra_seconds": 3.0}


@pytest.mark.parametrize("name", ["rtol", "atol", "forward_rtol"])
def test_every_tolerance_changes_the_digest_of_every_check(name: str) -> None:
    before = Digests(Tolerance())
    after = Digests(Tolerance(**{name: getattr(Tolerance(), name) * 2}))
    assert all(before.check(c.name) != after.check(c.name) for c in checks.CHECKS)


def test_one_checks_tolerance_changes_that_checks_digest_alone_and_is_what_it_is_judged_with() -> None:
    tolerance = Tolerance(checks={"tanh_backward": {"rtol": 1e-3}})
    before, after = Digests(Tolerance()), Digests(tolerance)
    assert [c.name for c in checks.CHECKS if before.check(c.name) != after.check(c.name)] == ["tanh_backward"]
    assert tolerance.for_check("tanh_backward").rtol == 1e-3 and tolerance.for_check("tanh_backward").atol == tolerance.atol
    assert tolerance.for_check("exp_backward") is tolerance
    with pytest.raises(ValueError, match="only atol, forward_rtol, rtol"):
        Tolerance(checks={"tanh_backward": {"rtool": 1e-3}}).for_check("tanh_backward")


def test_the_hint_level_is_a_setting_only_when_it_is_not_the_default() -> None:
    assert settings_values(Limits()) == settings_values(Limits(), hints="misconception")
    assert settings_values(Limits(), hints="solution")["Hints.level"] == "solution"
