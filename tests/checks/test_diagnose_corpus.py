"""Issue 34's own evaluation set (tests/checks/diagnose_corpus.py), held to the bar of the held-out sets: at least 90% of
the mistakes diagnosed specifically, none misleading, missed or misplaced, and no correct alternative failed."""

from __future__ import annotations

import pytest
from diagnose_corpus import ALTERNATIVES, MISTAKES, judge

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def outcomes() -> dict[str, str]:
    return {name: judge(entry).outcome for name, entry in MISTAKES.items()}


def test_the_set_spans_every_notebook_and_is_large_enough():
    assert len(MISTAKES) >= 40 and len(ALTERNATIVES) >= 10
    assert {e.variant.notebook for e in MISTAKES.values()} == {e.variant.notebook for e in ALTERNATIVES.values()}
    assert len({e.variant.notebook for e in MISTAKES.values()}) == 6


def test_no_mistake_is_missed_misplaced_or_diagnosed_misleadingly(outcomes):
    bad = {name: o for name, o in outcomes.items() if o in ("missed", "misplaced", "misleading")}
    assert bad == {}


def test_at_least_nine_in_ten_mistakes_are_diagnosed_specifically(outcomes):
    specific = sum(o == "specific" for o in outcomes.values())
    assert specific >= 0.9 * len(outcomes), {n: o for n, o in outcomes.items() if o != "specific"}


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_a_correct_alternative_keeps_every_point(name):
    assert judge(ALTERNATIVES[name]).outcome == "ok"
