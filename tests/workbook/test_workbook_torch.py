"""Notebook 05 side by side with PyTorch: the recorded numbers without it, the same numbers computed live with it."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader_mode import nbgrader_execution

from autograder.workbook import TORCH_REFERENCE, torch_reference

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "solutions" / "workbook" / "05_pytorch.ipynb"
SCRIPT = ROOT / "scripts" / "record_torch_reference.py"
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(
    not HAS_TORCH,
    reason="PyTorch is not installed here (./workbook test installs torch==2.13.0 when CI=true; elsewhere "
           "`pip install torch --index-url https://download.pytorch.org/whl/cpu`)",
)


def run_05(tmp_path: Path, hide_torch: bool) -> nbformat.NotebookNode:
    """Notebook 05's solutions in a real kernel, as a learner runs them; optionally as if torch were not installed."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    if hide_torch:
        nb.cells.insert(0, nbformat.v4.new_code_cell("import sys\nsys.modules['torch'] = None  # import torch fails"))
    with nbgrader_execution(None):
        NotebookClient(nb, kernel_name="python3", timeout=180, allow_errors=False,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def shown(nb: nbformat.NotebookNode, cell_id: str) -> str:
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def assert_side_by_side(nb: nbformat.NotebookNode, ref: dict) -> None:
    """Every PyTorch number the notebook shows agrees with the recorded one, and with the learner's engine."""
    neuron = shown(nb, "c05-10")
    assert f"torch:  o = {round(ref['neuron']['output'], 6)}" in neuron
    errors = [float(e) for e in re.findall(r"^\w+\s+\S+\s+\S+\s+(\S+)$", neuron, re.M)]
    assert len(errors) == 5 and max(errors) < 1e-12
    ours, torch = re.findall(r"^(?:ours|torch):\s+(\[.*\])$", shown(nb, "c05-15"), re.M)
    for a, b, r in zip(json.loads(ours), json.loads(torch), ref["wobble"]["grads"]):
        assert close(a, b) and close(b, r)
    table = shown(nb, "c05-15d")
    assert float(re.search(r"largest relative error between the two: (\S+)", table).group(1)) < 1e-12
    rows = re.findall(r"^\s*(-?\d\.\d)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", table, re.M)
    assert [float(r[0]) for r in rows] == ref["custom_tanh"]["inputs"]
    assert [float(r[1]) for r in rows] == [round(t, 8) for t in ref["custom_tanh"]["outputs"]]
    summary = shown(nb, nb.cells[-1].id)
    assert "2 of 2 points" in summary and "✗" not in summary


def test_recorded_numbers_carry_the_torch_version_and_the_script_that_made_them():
    ref = torch_reference()
    assert re.match(r"^\d+\.\d+\.\d+", ref["torch_version"])
    assert (ROOT / ref["made_by"]).resolve() == SCRIPT.resolve() and TORCH_REFERENCE.parent.name == "aids"
    assert set(ref) == {"torch_version", "made_by", "neuron", "wobble", "custom_tanh"}
    assert ref["custom_tanh"]["gradcheck"] is True
    t = ref["custom_tanh"]
    for x, out, grad in zip(t["inputs"], t["outputs"], t["grads"]):  # what tanh and its slope are
        assert close(out, math.tanh(x)) and math.isclose(grad, 1 - math.tanh(x) ** 2, rel_tol=1e-12)


@pytest.mark.slow
def test_05_without_torch_shows_the_recorded_numbers_beside_the_learners_and_passes(tmp_path: Path):
    nb = run_05(tmp_path, hide_torch=True)
    ref = torch_reference()
    intro = shown(nb, "c05-05")
    assert "PyTorch is not installed" in intro and f"PyTorch {ref['torch_version']}" in intro
    assert "--index-url https://download.pytorch.org/whl/cpu" in intro  # how to get the CPU-only build
    assert_side_by_side(nb, ref)


@pytest.mark.slow
@needs_torch
def test_05_with_torch_computes_live_the_numbers_that_were_recorded(tmp_path: Path):
    nb = run_05(tmp_path, hide_torch=False)
    assert "the PyTorch cells compute their numbers live" in shown(nb, "c05-05")
    assert_side_by_side(nb, torch_reference())


@pytest.mark.slow
@needs_torch
def test_the_record_script_recomputes_the_committed_numbers(tmp_path: Path):
    out = tmp_path / "reference.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    fresh, committed = json.loads(out.read_text()), torch_reference()

    def numbers(x: object) -> list[float]:
        if isinstance(x, dict):
            return [n for k in sorted(x) if k not in ("torch_version", "made_by") for n in numbers(x[k])]
        if isinstance(x, list):
            return [n for v in x for n in numbers(v)]
        return [float(x)] if isinstance(x, (int, float)) else []

    assert fresh.keys() == committed.keys()
    assert all(close(a, b) for a, b in zip(numbers(fresh), numbers(committed), strict=True))
