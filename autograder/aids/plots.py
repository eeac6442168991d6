"""Progress bars and plots for training (notebook 06): a widget and figures in Jupyter, text elsewhere, none while grading."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .env import grading, in_browser
from .env import in_kernel as _in_kernel

# What a plot cell prints where matplotlib is missing (a JupyterLite site served with Pyodide's core only)
NO_MATPLOTLIB = "plots need matplotlib; the numbers above are what it would draw"


def progress(iterable: Iterable[Any], total: int | None = None, desc: str = "") -> Iterator[Any]:
    """A tqdm progress bar: a widget in JupyterLab, text on stdout elsewhere (never on stderr)."""
    in_kernel = _in_kernel()
    if in_kernel:  # only a kernel shows widgets: elsewhere (a grading worker) the slow import is not worth it
        try:
            import ipywidgets  # noqa: F401  # tqdm.auto needs it for the widget bar
        except ImportError:
            in_kernel = False
    if in_kernel:
        from tqdm.notebook import tqdm

        return iter(tqdm(iterable, total=total, desc=desc))
    from tqdm import tqdm as text_tqdm

    if in_browser():
        text_tqdm.monitor_interval = 0  # its monitor is a thread, and the browser's Python cannot start one
    return iter(text_tqdm(iterable, total=total, desc=desc, file=sys.stdout))


_said: dict[str, object] = {}


def _say_once_per_cell(line: str) -> None:
    """Print `line`, unless the same cell (IPython's execution count) already printed it: a cell that plots twice
    says it once."""
    cell = None
    if "IPython" in sys.modules:
        from IPython import get_ipython

        shell = get_ipython()
        cell = getattr(shell, "execution_count", None) if shell is not None else None
    if cell is None or _said.get(line) != cell:
        print(line)
    _said[line] = cell


def _pyplot() -> Any:
    """matplotlib's pyplot, or None (after saying so in one line) where matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        _say_once_per_cell(NO_MATPLOTLIB)
        return None

    if not _in_kernel() and "MPLBACKEND" not in os.environ:
        matplotlib.use("Agg")  # no display outside Jupyter
    import matplotlib.pyplot as plt

    return plt


def _shown(fig: Any, alt: str) -> Any:
    """In Jupyter: show the figure now, as an image whose alternative text is `alt`, and return None (no second
    copy); elsewhere return it for saving."""
    if not _in_kernel():
        return fig
    import base64
    import io
    from html import escape

    from IPython.display import display

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    _pyplot().close(fig)
    png = base64.b64encode(buffer.getvalue()).decode()
    # matplotlib's own display is an image without alternative text (JupyterLab and nbconvert show it as a bare <img>)
    display({"text/html": f'<img alt="{escape(alt)}" src="data:image/png;base64,{png}">', "image/png": png,
             "text/plain": f"<plot: {alt}>"}, metadata={"image/png": {"alt": alt}}, raw=True)
    return None


def _not_drawn(title: str) -> bool:
    """While grading, say that a plot is left out and return True: no grade depends on a picture, and drawing
    one took most of a graded notebook's time."""
    if grading():
        print(f"(plot '{title}': drawn when you run this cell yourself, not while grading)")
        return True
    return False


def plot_loss(losses: Sequence[float] | dict[str, Sequence[float]], title: str = "training loss") -> Any:
    """Plot the loss after each step (several labelled curves when given a dict), log scale when it spans > 10x."""
    if _not_drawn(title):
        return None
    plt = _pyplot()
    if plt is None:
        return None
    curves = losses if isinstance(losses, dict) else {"": losses}
    fig, ax = plt.subplots(figsize=(5, 3))
    for label, ys in curves.items():
        ax.plot(range(len(ys)), ys, marker="." if len(ys) < 40 else None, label=label or None)
    if len(curves) > 1:
        ax.legend(fontsize=8)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    positive = [x for ys in curves.values() for x in ys if x > 0]
    if positive and max(positive) > 10 * min(positive):
        ax.set_yscale("log")
    fig.tight_layout()
    ends = "; ".join(f"{label + ': ' if label else ''}{ys[0]:.3g} to {ys[-1]:.3g} in {len(ys)} steps"
                     for label, ys in curves.items() if len(ys))
    return _shown(fig, f"line plot '{title}' of the loss after each step ({ends})")


def plot_decision_boundary(model: Any, xs: Sequence[Sequence[float]], ys: Sequence[float], resolution: int = 30) -> Any:
    """Colour the plane by the sign of model(x) and scatter the examples on top."""
    if _not_drawn("decision boundary"):
        return None
    plt = _pyplot()
    if plt is None:
        return None
    x0s = [p[0] for p in xs]
    x1s = [p[1] for p in xs]
    lo0, hi0 = min(x0s) - 0.3, max(x0s) + 0.3
    lo1, hi1 = min(x1s) - 0.3, max(x1s) + 0.3
    g0 = [lo0 + (hi0 - lo0) * i / (resolution - 1) for i in range(resolution)]
    g1 = [lo1 + (hi1 - lo1) * j / (resolution - 1) for j in range(resolution)]
    score = [[float(getattr(model([a, b]), "data", 0.0)) for a in g0] for b in g1]
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.contourf(g0, g1, score, levels=[-10, 0, 10], colors=["#f4c7c3", "#c6dbef"], alpha=0.8)
    ax.contour(g0, g1, score, levels=[0], colors="k", linewidths=1)
    ax.scatter(x0s, x1s, c=["#1f77b4" if y > 0 else "#d62728" for y in ys], s=14, edgecolors="k", linewidths=0.3)
    ax.set_title("decision boundary: sign of model(x)")
    fig.tight_layout()
    right = sum((model_y > 0) == (y > 0) for model_y, y in zip(_outputs(model, xs), ys))
    return _shown(fig, f"the plane coloured by the sign of model(x), with the {len(ys)} examples on top; "
                       f"{right} of them on their own side")


def plot_slopes(f: Any, slopes: dict[float, float], xs: Sequence[float]) -> Any:
    """Plot f over `xs` and, at each x0 of `slopes`, a short dashed line with that slope (notebook 01's tangents)."""
    if _not_drawn("slopes"):
        return None
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(xs, [f(x) for x in xs], label="f(x)")
    for x0, slope in slopes.items():
        ax.plot([x0 - 0.7, x0 + 0.7], [f(x0) - 0.7 * slope, f(x0) + 0.7 * slope], "--",
                label=f"slope {slope:.1f} at x = {x0:.2f}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    at = ", ".join(f"{slope:.1f} at x = {x0:.2f}" for x0, slope in slopes.items())
    return _shown(fig, f"f(x) for x from {min(xs):g} to {max(xs):g}, with dashed lines of slope {at}")


def _outputs(model: Any, xs: Sequence[Sequence[float]]) -> list[float]:
    return [float(getattr(model(list(x)), "data", 0.0)) for x in xs]
