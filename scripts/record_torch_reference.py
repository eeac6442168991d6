"""Record what PyTorch computes for notebook 05's comparisons, so that the notebook can show it without PyTorch.

Run it where PyTorch is installed: `.venv/bin/python scripts/record_torch_reference.py`. It rewrites
autograder/aids/torch_reference.json, stamped with the version of torch that made the numbers. The functions and inputs
below are notebook 05's; tests/workbook/test_workbook_torch.py runs the notebook live and compares it with this file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).resolve().parent.parent / "autograder" / "aids" / "torch_reference.json"

NEURON_INPUTS = {"x1": 1.5, "x2": -0.5, "w1": 0.8, "w2": -1.2, "b": -1.0}
WOBBLE_POINT = [0.7, -1.3]
TANH_XS = [-2.0, -0.5, 0.0, 0.8, 1.7]


def neuron(x1: Any, x2: Any, w1: Any, w2: Any, b: Any) -> Any:
    """tanh(x1*w1 + x2*w2 + b), as in notebook 05."""
    return (x1 * w1 + x2 * w2 + b).tanh()


def wobble(a: Any, b: Any) -> Any:
    """Something with every brick in it, as in notebook 05."""
    return (a * b).exp() / (1 + a**2) - b.tanh()


class Tanh(torch.autograd.Function):
    """tanh with its own forward and backward, as in notebook 05."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        t = torch.tanh(x)
        ctx.save_for_backward(t)
        return t

    @staticmethod
    def backward(ctx: Any, out_grad: torch.Tensor) -> torch.Tensor:
        (t,) = ctx.saved_tensors
        return (1 - t**2) * out_grad


def leaf(x: float) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)


def record() -> dict[str, Any]:
    """Every number notebook 05 shows for PyTorch, with the inputs it was computed at."""
    leaves = {name: leaf(v) for name, v in NEURON_INPUTS.items()}
    o = neuron(**leaves)
    o.backward()
    point = [leaf(x) for x in WOBBLE_POINT]
    wobble_grads = [g.item() for g in torch.autograd.grad(wobble(*point), point)]
    x = torch.tensor(TANH_XS, dtype=torch.float64, requires_grad=True)
    t = Tanh.apply(x)
    t.sum().backward()
    checked = torch.autograd.gradcheck(Tanh.apply, (torch.tensor(TANH_XS, dtype=torch.float64, requires_grad=True),))
    return {
        "torch_version": torch.__version__,
        "made_by": "scripts/record_torch_reference.py",
        "neuron": {"inputs": NEURON_INPUTS, "output": o.item(), "grads": {n: v.grad.item() for n, v in leaves.items()}},
        "wobble": {"inputs": WOBBLE_POINT, "grads": wobble_grads},
        "custom_tanh": {"inputs": TANH_XS, "outputs": t.tolist(), "grads": x.grad.tolist(), "gradcheck": bool(checked)},
    }


def main(argv: list[str] | None = None) -> int:
    """Write the recorded numbers as JSON (to autograder/aids/torch_reference.json unless --out says otherwise)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the JSON (default {OUT})")
    args = parser.parse_args(argv)
    args.out.write_text(json.dumps(record(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} (PyTorch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
