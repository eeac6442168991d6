"""The grader's own settings, as traitlets classes that `nbgrader_config.py` configures."""

from __future__ import annotations

import os
from pathlib import Path

from traitlets import Float, Int, List, Unicode
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
    notebook_output_bytes = Int(5_000_000, help="Bytes of output (as notebook JSON) all cells of a notebook may leave "
                                "while grading; past it, outputs are dropped with a note.").tag(config=True)
    notebook_mb = Int(20, help="Largest submitted notebook file read, in MiB (a bigger one scores 0).").tag(config=True)


class BatchGrading(Configurable):
    """How `python -m autograder grade` runs."""

    jobs = Int(0, help="Notebooks graded at a time; 0 means one more than the CPUs, as many as fit in memory at "
                       "Limits.memory_mb each.").tag(config=True)


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
