"""The settings a grade depends on are read from the traits themselves: every configurable trait of `Limits` and
`Tolerance` changes a notebook's fingerprint (a new one too, with no list to keep), and the text of the defaults is
the one earlier versions wrote, so an upgrade regrades nothing by itself."""

from __future__ import annotations

import pytest
from traitlets import Float

from autograder.grading.discover.fingerprint import settings_text
from autograder.settings import Limits, Tolerance

DEFAULTS_BEFORE = ('{"limits": [10.0, 60.0, 300.0, 2048, 1000000, 20, 5000000, 10000, 30.0, 30.0, 2048], '
                   '"tolerance": [1e-05, 1e-06, 1e-09]}')


@pytest.mark.parametrize("settings, name", [*((Limits, n) for n in Limits.class_trait_names(config=True)),
                                            *((Tolerance, n) for n in Tolerance.class_trait_names(config=True))])
def test_every_configurable_trait_changes_the_fingerprint(settings: type, name: str) -> None:
    limits, tolerance = Limits(), Tolerance()
    target = limits if settings is Limits else tolerance
    before = settings_text(limits, tolerance)
    setattr(target, name, getattr(target, name) * 2)
    assert settings_text(limits, tolerance) != before


def test_a_trait_added_to_limits_counts_and_leaves_the_text_of_the_others_as_it_was() -> None:
    class Declared(Limits):
        extra_seconds = Float(3.0, help="a new limit").tag(config=True)

    assert settings_text(Declared(), Tolerance()) == DEFAULTS_BEFORE.replace("2048], ", "2048, 3.0], ")


def test_the_defaults_text_is_the_one_earlier_versions_wrote() -> None:
    assert settings_text(Limits(), Tolerance()) == DEFAULTS_BEFORE
