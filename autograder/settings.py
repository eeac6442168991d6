"""The grader's own settings, as traitlets classes that `nbgrader_config.py` configures."""

from __future__ import annotations

import os
from pathlib import Path

from traitlets import Enum, Float, Int, List, Unicode
from traitlets.config import Config, Configurable
from traitlets.config.loader import PyFileConfigLoader


class Tolerance(Configurable):
    """How close the learner's numbers must be to the grader's."""

    rtol = Float(1e-5, help="Relative tolerance of a gradient.").tag(config=True)
    atol = Float(1e-6, help="Absolute tolerance of a gradient, scaled by max(1, |f|).").tag(config=True)
    forward_rtol = Float(1e-9, help="Relative tolerance of a forward value.").tag(config=True)


class Limits(Configurable):
    """Bounds on learner code, so a runaway submission cannot stall grading."""

    check_timeout = Float(10.0, help="Seconds one check may spend in learner code.").tag(config=True)
    cell_timeout = Float(60.0, help="Seconds one notebook cell may run while grading.").tag(config=True)
    notebook_timeout = Float(300.0, help="Seconds one whole notebook may run while grading.").tag(config=True)
    memory_mb = Int(2048, help="Address-space cap of a grading worker, in MiB.").tag(config=True)
    output_bytes = Int(1_000_000, help="Bytes of output (as notebook JSON) a cell may leave while grading.").tag(config=True)
    notebook_mb = Int(20, help="Largest submitted notebook file read, in MiB (a bigger one scores 0).").tag(config=True)
    notebook_output_bytes = Int(5_000_000, help="Bytes of output (as notebook JSON) all cells of a notebook may leave "
                                "while grading; past it, outputs are dropped with a note.").tag(config=True)
    notebook_cells = Int(10_000, help="Most cells a submitted notebook may hold; more: not read, scored 0 and flagged "
                         "(checked on the file's bytes before it is parsed).").tag(config=True)
    read_timeout = Float(30.0, help="Seconds the grader may spend reading one submitted notebook (parse, bounds, "
                         "validation), in a helper process; past it, not read, scored 0 and flagged.").tag(config=True)
    render_timeout = Float(30.0, help="Seconds the grader may spend making one autograded notebook safe to show "
                           "(markdown, HTML, SVG) and writing it, in a helper process; past it, what is left is shown as "
                           "plain text and the notebook is flagged (its scores stand).").tag(config=True)
    helper_memory_mb = Int(2048, help="Address-space cap of the helper process that reads and renders a notebook, in "
                           "MiB.").tag(config=True)


# Bounds on a submitted notebook's shape, checked after its JSON is parsed (in the helper process) and before nbformat
# validates it: a notebook nested deeper, or with a longer text, is not read (scored 0, flagged).
NOTEBOOK_DEPTH = 64  # JSON nesting (a notebook's own is ~8; cell metadata a few more)
NOTEBOOK_VALUES = 1_000_000  # JSON values (strings, numbers, lists, objects) in all: nbformat validates each one
NOTEBOOK_TEXT_CHARS = 8 * 2**20  # the longest text, in characters: one JSON string, or one cell's source joined from its lines
# A submission's files besides its notebooks (data a notebook reads): handed to the notebook's worker and copied into
# autograded/ only while they fit in these, counted by apparent size (st_size: a sparse file counts whole, as a copy
# writes it); each file past a bound is refused and flagged, the rest go on.
OTHER_FILES_BYTES = 50 * 2**20
OTHER_FILES_COUNT = 1_000
# Bounds on what the helper makes safe to show (autograder/grading/grade/bounded.py):
HTML_DEPTH = 1_000  # elements open at once in learner HTML (nh3's cleaning is quadratic in it): deeper, shown as text
STANDIN_CHARS = 2_000  # characters of a cell or output shown as plain text when it could not be made safe in time


class BatchGrading(Configurable):
    """How `python -m autograder grade` runs."""

    jobs = Int(0, help="Notebooks graded at a time; 0 means one more than the CPUs, as many as fit in memory at "
                       "Limits.memory_mb each.").tag(config=True)


class Hints(Configurable):
    """What a diagnosis may show a learner."""

    level = Enum(("misconception", "solution"), default_value="misconception", help=(
        "What a failed check (✗) may show. 'misconception' (the default): it names the misconception and shows what "
        "the learner's code computed (their formula, recovered from the numbers, and the numbers), and never writes "
        "the correct expression. 'solution': it also writes the correct expression (e.g. it should be "
        "`(f(x + h) - f(x - h)) / (2 * h)`). Graded runs (Validate, autograde, feedback) follow this setting; a "
        "learner's own kernel follows it too, or the notebook's metadata {\"autograder\": {\"hints\": ...}} where "
        "that is set.")).tag(config=True)


class Similarity(Configurable):
    """How `python -m autograder similarity` reads, compares and ranks the learners' solution cells."""

    max_notebooks = Int(50_000, help="Most submitted notebooks one run reads (students x notebooks); more is refused "
                        "before any is read.").tag(config=True)
    cells_per_notebook = Int(1_000, help="Cells of a submitted notebook looked at; past it, the notebook's other "
                             "cells are not read.").tag(config=True)
    cell_bytes = Int(50_000, help="Bytes of one solution cell compared; a longer cell is cut there.").tag(config=True)
    noise = Int(25, help="Shortest match that counts, in characters of normalised code (copydetect's noise "
                "threshold: every name is one letter, spaces and comments are gone).").tag(config=True)
    guarantee = Int(30, help="A match this long (normalised characters) is always found (copydetect's guarantee "
                    "threshold; the winnowing window is guarantee - noise + 1).").tag(config=True)
    common_share = Float(0.05, help="A fingerprint found in more than this share of the class (and in more than "
                         "common_floor students) is what every answer looks like: never evidence.").tag(config=True)
    common_floor = Int(5, help="A fingerprint shared by at most this many students is never called common.").tag(config=True)
    flag_z = Float(60.0, help="A pair of students whose robust z-score against all the class's pairs reaches this is "
                   "listed as standing out (evidence to read, never a verdict). The pairs' scores have a long tail: in "
                   "the synthetic class of 2,000 learners the highest independent pair reached 54, the lowest copy 72 "
                   "(benchmarks/bench_similarity.py).").tag(config=True)
    flag_public_z = Float(10.0, help="A student whose robust z-score against a public engine, among all the class's "
                          "scores against it, reaches this is listed as standing out.").tag(config=True)
    show = Int(40, help="Most pairs shown side by side on the page (the CSV lists every pair above flag_z).").tag(config=True)
    public_engines = List(Unicode(), ["micrograd"], help="Public code every submission is also compared with: an "
                          "installed package's name (its .py files are read, never imported) or a path to a .py "
                          "file, a notebook or a folder of them.").tag(config=True)


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read a traitlets config file (default: $AUTOGRADER_CONFIG, else no file)."""
    path = path or os.environ.get("AUTOGRADER_CONFIG")
    if not path:
        return Config()
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"config file not found: {p}")
    return PyFileConfigLoader(p.name, path=str(p.parent.resolve())).load_config()
