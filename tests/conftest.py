"""Shared fixtures."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINES = Path(__file__).resolve().parent / "engines"


@pytest.fixture
def engine_path():
    """Path of a test engine by module name (tests/engines/NAME.py)."""

    def path(name: str) -> Path:
        return ENGINES / f"{name}.py"

    return path
