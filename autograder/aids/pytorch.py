"""PyTorch beside the learner's engine (notebook 05): live when PyTorch is installed, else the recorded numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .env import grading

TORCH_REFERENCE = Path(__file__).with_name("torch_reference.json")
CPU_TORCH = ".venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu"


class NotRecorded(LookupError):
    """The recorded PyTorch numbers are for other inputs; shown in Jupyter as one line."""

    def _render_traceback_(self) -> list[str]:
        return [f"NotRecorded: {self}"]


def torch_reference() -> dict[str, Any]:
    """The numbers scripts/record_torch_reference.py recorded with PyTorch, and that PyTorch's version."""
    return json.loads(TORCH_REFERENCE.read_text(encoding="utf-8"))


def torch_or_none() -> Any:
    """PyTorch if it is installed (and nbgrader is not running the notebook), else None; says which numbers show."""
    if not grading():
        try:
            import torch
        except ImportError:
            pass
        else:
            print(f"PyTorch {torch.__version__}: the PyTorch cells compute their numbers live.")
            return torch
    version = torch_reference()["torch_version"]
    why = "nbgrader is running this notebook" if grading() else "PyTorch is not installed"
    print(f"{why}: the PyTorch cells show the numbers PyTorch {version} computed for the same code "
          "(recorded by scripts/record_torch_reference.py).")
    if not grading():
        print(f"To run them live, install PyTorch's CPU-only build (about 200 MB; a plain `pip install torch` on Linux "
              f"fetches the CUDA build, several GB), then restart the kernel:\n    {CPU_TORCH}")
    return None


def recorded(name: str, inputs: Any) -> dict[str, Any]:
    """What PyTorch computed for `name` (neuron, wobble, custom_tanh), provided `inputs` are the recorded ones."""
    entry = torch_reference()[name]
    if entry["inputs"] != inputs:
        raise NotRecorded(f"PyTorch's numbers were recorded at {entry['inputs']}, not at {inputs}: "
                          "put the inputs back to compare, or install PyTorch to compute at any inputs")
    return entry


