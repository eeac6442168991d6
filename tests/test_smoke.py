"""The package imports and the reference engine earns full marks."""

from autograder import checks as catalog
from autograder.cli import check_file


def test_reference_engine_earns_full_marks(engine_path):
    results = check_file(str(engine_path("reference")))
    assert [r.name for r in results if not r.passed] == []
    assert {r.name for r in results} >= {c.name for c in catalog.spec_checks()}
