"""Every known learner mistake fails a check aimed at the method that holds it, and the message says why."""

import re

import pytest
from mistakes import BY_NAME, MISTAKES, REFERENCE, graded

NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def test_catalog_has_at_least_25_distinct_mistakes():
    sources = {m.source() for m in MISTAKES}
    assert len(MISTAKES) == len(BY_NAME) == len(sources) >= 25
    assert REFERENCE not in sources


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_mistake_fails_a_check_targeting_the_method_that_holds_it(name):
    mistake = BY_NAME[name]
    aimed = [r for r in graded(name) if not r.passed and (mistake.target in r.targets or r.culprit == mistake.target)]
    assert aimed, f"no failed check targets {mistake.target}"
    assert all(r.points == 0 and r.max_points > 0 for r in aimed)
    explained = [r for r in aimed if all(s in r.message for s in mistake.says)]
    assert explained, f"no message says {mistake.says}: {aimed[0].message}"


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_mistake_message_names_where_and_expected_against_got(name):
    mistake = BY_NAME[name]
    for r in graded(name):
        if r.passed or (mistake.target not in r.targets and r.culprit != mistake.target):
            continue
        if r.same_as:  # pinned on another check's culprit: names it, and that check's diagnosis says the rest
            assert r.culprit and f"`{r.culprit}`" in r.message and r.same_as != r.name, r.message
            continue
        first = r.message.splitlines()[0]
        # where: an expression in backticks, a call like MLP(2, [3, 1])(x), or the learner's method by name
        assert re.search(r"`[^`]+`|\w+\(.*\)|Value\.\w+", r.message), r.message
        # what: expected against got, or the learner's exception / wrong type named
        # (a structure: expected out._op = '*', got '+'; a count: has 36 Values, expected 41)
        assert (re.search(rf"expected .*{NUMBER}.*got .*{NUMBER}|gave .*{NUMBER}.*expected .*{NUMBER}", first, re.S)
                or re.search(rf"expected [^;]+, got \S|has {NUMBER} \w+, expected {NUMBER}", first)
                or re.search(r"\b[A-Z]\w*(Error|Exception)\b|returned a \w+|should return|does not show|called some",
                             first)), first


def test_unknown_substitution_is_refused():
    from mistakes import Mistake

    with pytest.raises(AssertionError):
        Mistake("typo", "Value.__add__", (("no such text", "x"),)).source()
