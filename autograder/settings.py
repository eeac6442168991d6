"""The grader's own settings and every bound it keeps, in one module.

- Configurable settings: traitlets classes that `nbgrader_config.py` configures (`Tolerance`, `Limits`, `BatchGrading`,
  `Hints`, `Similarity`), each trait with its `help=`. A new setting a course may change is a trait here; the grading
  fingerprint (`grading.discover.fingerprint.settings_text`) takes every trait of `Limits` and `Tolerance` as it is.
- Fixed bounds, below `Limits`: what a submission, a worker, the channel, the sandbox and the grader's helpers may hold
  or take, that no course has reason to change. A new one is a constant here, imported where it is used; the code
  that runs inside the sandbox with the standard library only (`grading/grade/sandbox/forkserver.py`,
  `grading/grade/worker/audit.py`) is handed its values when it starts. A test finds no such bound anywhere else.
"""

from __future__ import annotations

import os
from pathlib import Path

from traitlets import Dict, Enum, Float, Int, List, Unicode
from traitlets.config import Config, Configurable
from traitlets.config.loader import PyFileConfigLoader


class Tolerance(Configurable):
    """How close the learner's numbers must be to the grader's."""

    rtol = Float(1e-5, help="Relative tolerance of a gradient.").tag(config=True)
    atol = Float(1e-6, help="Absolute tolerance of a gradient, scaled by max(1, |f|).").tag(config=True)
    forward_rtol = Float(1e-9, help="Relative tolerance of a forward value.").tag(config=True)
    checks = Dict(value_trait=Dict(value_trait=Float()), default_value={}, help=(
        "Tolerances of single checks, by check name, over the three above: {'tanh_backward': {'rtol': 1e-4}}. "
        "A regrade after a change here touches only the notebooks where those checks ran.")).tag(config=True)

    def values(self) -> dict[str, float]:
        """Each tolerance by name (every Float trait: `checks` is not one)."""
        return {name: getattr(self, name) for name, trait in self.traits(config=True).items() if isinstance(trait, Float)}

    def for_check(self, name: str) -> Tolerance:
        """The tolerance check `name` is judged with: this one, with the check's own values from `checks` over it."""
        own = self.checks.get(name)
        if not own:
            return self
        values = self.values()
        unknown = set(own) - set(values)
        if unknown:
            raise ValueError(f"Tolerance.checks[{name!r}] sets {', '.join(sorted(unknown))}: only {', '.join(values)}")
        return Tolerance(**{**values, **{k: float(v) for k, v in own.items()}})


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
    rendered_chars = Int(10_000_000, min=0, help="Characters of markdown, HTML and SVG one autograded notebook may hold once "
                         "made safe to show (markdown cells, raw cells, rich outputs; rendering can make them several "
                         "times longer than written), counted cell by cell, smallest first; the cells past it are shown "
                         "as plain text, cut, and the notebook is flagged (its scores stand).").tag(config=True)


MIB = 2**20

# ---------------------------------------------------------------- fixed bounds: a submission

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
LARGEST_IMAGE = 100_000  # pixels: an image's width or height from its metadata, at most
SUBMISSION_ENTRIES = 10_000  # files and folders scanned per submission (a collected folder holds a handful)
TIMESTAMP_BYTES = 4096  # of a submission's timestamp.txt read (nbgrader writes ~30 characters)
SIMILARITY_CSV_BYTES = 1_000_000  # of the similarity command's CSV the class report reads (it lists the pairs that stand out)
SIMILARITY_SHOWN = 20  # pairs that stand out listed in the class report (the similarity page shows them all)
RECORD_DIGEST_CHARS = 16  # hex digits of SHA-256 a resume record keeps per dependency (a change is found by chance
# 2**-64 short of certain; the record itself is authenticated): a notebook's record stays a few hundred bytes
VERDICT_CHARS = 200  # of a check's verdict kept in a resume record and shown in the score-change report (learner text)

# ---------------------------------------------------------------- fixed bounds: the channel (grading/grade/channel.py)
# What one notebook's worker may send. The output cap itself is Limits.output_bytes (per cell); RESERVE is the room
# beyond it for the truncation note and one error, which the worker always keeps.
RESERVE = 64 * 1024
ERROR_TEXT = 2000  # characters of an error's evalue and of each traceback line
ERROR_LINES = 20  # traceback lines of one error
MAX_OUTPUTS = 1000  # outputs of one cell (many tiny outputs cost more than their bytes in a notebook)
MAX_DEPTH = 8  # nesting of an observation or of a JSON mime value
MAX_ITEMS = 100_000  # numbers, strings and containers in one observation
MAX_STRING = 2000  # characters of a string in an observation, a missing target or a suspicion
MAX_LIST = 100  # entries of a list of names (missing targets, suspicions)
MAX_OBSERVATION = 1024 * 1024  # JSON bytes of one observation
MAX_CELL_INDEX = 100_000  # a cell's index in a message
MAX_INTEGER = 2**53  # the largest integer a message may hold (every float's whole part up to it is exact)
MAX_AUDITS = 50  # audit reports of one notebook the grader reads (the worker sends at most AUDIT_REPORTS)
AUDIT_REPORTS = 20  # distinct audited events a worker reports (the first ones are the evidence)
GRACE = 5.0  # seconds the grader waits beyond a worker's own time limit before it kills the worker
REQUEST_TIMEOUT = 10.0  # seconds a worker may take to read one request of the grader (a few hundred bytes)

# ---------------------------------------------------------------- fixed bounds: the sandbox (grading/grade/sandbox/)
SANDBOX_START_TIMEOUT = 60.0  # seconds the fork server may take to import numpy, matplotlib and IPython (~1 s alone)
SPAWN_TIMEOUT = 10.0  # seconds the fork server may take to start one worker (~10 ms)
SETUP_TIMEOUT = 10.0  # seconds a notebook's PID 1 may take to be set up (one clone, or a builder's hand-over; ~2 ms)
PING_TIMEOUT = 10.0  # seconds a fork server that missed a deadline may take to show it still answers
KILL_TIMEOUT = 3.0  # seconds a killed worker may take to be reported gone before the server is pinged
EXIT_STATUS_TIMEOUT = 2.0  # seconds a worker that closed its channel may take to report how it ended
EXIT_TIMEOUT = 5.0  # seconds a killed process (a notebook's, a helper's) may take to be gone before it is waited no more
CONTROL_TIMEOUT = 5.0  # seconds a request may wait to be written on the sandbox's control socket
START_SEND_TIMEOUT = 60.0  # seconds a new worker may take to read its start message (its plan and files)
# Each notebook's own writable mounts (tmpfs: its bytes are memory), by what they are: (bytes, inodes). Where each is
# mounted is sandbox/inside.py's. Nothing writable is shared between notebooks.
NOTEBOOK_MOUNTS = {"scratch": (512 * MIB, 20_000), "tmp": (64 * MIB, 5_000), "shm": (64 * MIB, 1_000)}
EMPTY_TMPFS = (MIB, 64)  # (bytes, inodes) of a notebook's read-only /dev, and of the folder that builds it
PROC_TMPFS = (4096, 16)  # (bytes, inodes) of the empty tmpfs over a notebook's /proc
HIDDEN_TMPFS_BYTES = 4096  # the empty tmpfs hiding an installed copy of the grader from the sandbox
NOFILE = 1024  # open files of one notebook process
NPROC = 256  # processes of one notebook: its pids cgroup where there is one, else RLIMIT_NPROC (per user, not enforced for root)
CPU_SHARES = 1024  # every notebook's cgroup weight, the same as one process of the grader's own cgroup
WORKER_FILE_BYTES = 256 * MIB  # RLIMIT_FSIZE: the largest file a worker writes in its scratch folder
CPU_BACKSTOP = 5  # seconds of CPU beyond Limits.notebook_timeout (RLIMIT_CPU): the grader's wall clock comes first

# ---------------------------------------------------------------- fixed bounds: the helpers (grading/grade/bounded.py)
HELPER_START_TIMEOUT = 120.0  # seconds the zygote may take to import the readers and renderers (~1 s alone)
FORK_TIMEOUT = 10.0  # seconds a helper's fork request may take once the zygote is up
JOB_SEND_TIMEOUT = 10.0  # seconds an idle helper may take to read its job (a notebook: a few MB at most)


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
