"""Answer-free teaching aids the notebooks use: the graph picture, the two-moons data, plots, progress bars, PyTorch's
numbers. They know no check and no answer, import only the standard library and the probe side (`autograder.probes`),
and are staged into the grading sandbox unchanged (`autograder.workbook` re-exports them next to `summary`).
"""

from .data import make_moons
from .env import demo_size, grading, in_kernel
from .graph import GraphPicture, draw_graph
from .plots import plot_decision_boundary, plot_loss, plot_slopes, progress
from .pytorch import CPU_TORCH, TORCH_REFERENCE, NotRecorded, recorded, torch_or_none, torch_reference

__all__ = ["CPU_TORCH", "TORCH_REFERENCE", "GraphPicture", "NotRecorded", "demo_size", "draw_graph", "grading",
           "in_kernel", "make_moons", "plot_decision_boundary", "plot_loss", "plot_slopes", "progress", "recorded", "torch_or_none",
           "torch_reference"]
