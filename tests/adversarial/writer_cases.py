"""Submissions that go after what the grader writes once the notebooks are graded (issue 20), two of each class:
a submission time that cannot be read, text no writer can encode, script for the instructor's browser, markers
that made redaction quadratic, and files that are not regular files of the submission.

Each case makes its submission folder itself (`make(folder, ctx)`): some need a FIFO, a link or the canary server's
port. `test_grade_writer_batch.py` grades them in one batch with honest classmates, then makes feedback, exports
the grades and opens every page in Chromium.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .corpus import NB, SOURCE, append, cell, solved, text

STAMP = "2025-01-15 10:00:00.000000 UTC"


@dataclass(frozen=True)
class Context:
    """What a case may point at: the canary server that no script may reach, and a folder outside every submission."""

    canary: str  # http://127.0.0.1:PORT
    outside: Path


def script(ctx: Context, tag: str) -> str:
    """JavaScript that, if it ever runs, sets a window flag, logs to the console and calls the canary server."""
    return (f"window.__autograder_xss = '{tag}'; console.log('AUTOGRADER-XSS {tag}'); "
            f"fetch('{ctx.canary}/script/{tag}').catch(function () {{}});")


@dataclass(frozen=True)
class WriterCase:
    """One submission of notebook 02 and what the batch must record for it."""

    make: Callable[[Path, Context], None]
    score: float  # notebook 02's score (5 = full marks)
    flag: str = ""  # a fragment of the flags ("" for none)
    reason: str = ""  # a fragment of the reason
    xss: bool = False  # its feedback and formgrader view are opened in Chromium


def _write(folder: Path, nb: nbformat.NotebookNode | bytes, stamp: str | None = STAMP) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{NB}.ipynb").write_bytes(nb if isinstance(nb, bytes) else text(nb))
    if stamp is not None:
        (folder / "timestamp.txt").write_text(stamp)


def honest(folder: Path, ctx: Context) -> None:
    _write(folder, solved())


# ---- class 1: a submission time that cannot be read (nbgrader itself stops the whole run on one)

def stamp_garbage(folder: Path, ctx: Context) -> None:
    _write(folder, solved(), stamp="the 32nd of Smarch, after lunch")


def stamp_fifo(folder: Path, ctx: Context) -> None:
    _write(folder, solved(), stamp=None)
    os.mkfifo(folder / "timestamp.txt")  # a reader that opened it would wait forever


# ---- class 2: text no writer can encode (a lone surrogate, sent by the worker)

SURROGATE_NAME = """import os
try:  # the audit hook reports code compiled under a library's file name, naming it: here with a lone surrogate
    compile("1", os.__file__ + chr(0xD800), "exec")
except UnicodeEncodeError:
    pass"""


def surrogate_flag(folder: Path, ctx: Context) -> None:
    # a flag (sent by the worker) no UTF-8 writer can encode: it reaches the summary, the CSV, the notebook and feedback
    _write(folder, append(solved(), "ex_02_add", SURROGATE_NAME))


def surrogate_output(folder: Path, ctx: Context) -> None:
    code = 'from IPython.display import display\ndisplay({"text/plain": "lone " + chr(0xDFFF)}, raw=True)'
    _write(folder, append(solved(), "ex_02_add", code))


# ---- class 3: script in the feedback and the formgrader

def xss_outputs(folder: Path, ctx: Context) -> None:
    js = script(ctx, "outputs")
    html = (f"<script>{js}</script><img src=x onerror=\"{js}\"><img src='{ctx.canary}/img'>"
            f"<iframe src='javascript:{js}'></iframe><a href='javascript:{js}' id='click-me'>click</a>"
            f"<style>body {{ background: url({ctx.canary}/css) }}</style>")
    svg = (f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{js}\"><script>{js}</script>"
           f"<image href='{ctx.canary}/svg'/><rect width='4' height='4'/></svg>")
    code = f'''from IPython.display import display
display({{"text/html": {html!r}, "text/plain": "html"}}, raw=True)
display({{"application/javascript": {js!r}}}, raw=True)
display({{"image/svg+xml": {svg!r}, "text/plain": "svg"}}, raw=True)
display({{"text/markdown": {f"<script>{js}</script>"!r}}}, raw=True)
display({{"image/png": "iVBORw0KGgo=", "text/plain": "png"}}, raw=True,
        metadata={{"image/png": {{"width": 10, "filenames": {ctx.canary + "/png"!r}}}}})
display({{"application/vnd.jupyter.widget-view+json": {{"model_id": "x", "version_major": 2, "version_minor": 0}}}}, raw=True)'''
    _write(folder, append(solved(), "ex_02_add", code))


def xss_markdown(folder: Path, ctx: Context) -> None:
    js = script(ctx, "markdown")
    nb = solved()
    i = next(k for k, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "check_02_add")
    nb.cells.insert(i + 1, nbformat.v4.new_markdown_cell(
        f"My notes <script>{js}</script>\n\n<img src=x onerror=\"{js}\">\n\n<svg onload=\"{js}\"></svg>\n\n"
        f"[a link](javascript:{js}) ![a picture]({ctx.canary}/md-img)"))
    # the grader's own "Grading notes" quote a solution cell's exception name: here it is HTML
    name = f"<img src=x onerror=\\\"{js}\\\">"
    append(nb, "ex_02_value_class", f'raise type("{name}", (Exception,), {{}})()')
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "version_major": 2, "version_minor": 0, "x": f"</script><script>{js}</script>"}}
    _write(folder, nb)


# ---- class 4: markers that made redaction quadratic (the feedback step ran past 90 s on 30,000 of them)

def hidden_unterminated(folder: Path, ctx: Context) -> None:
    nb = solved()
    c = cell(nb, "ex_02_value_class")
    c.source = "### BEGIN HIDDEN TESTS\n" * 100_000 + c.source
    _write(folder, nb)


def hidden_nested(folder: Path, ctx: Context) -> None:
    nb = solved()
    c = cell(nb, "ex_02_add")
    c.source = "  ### BEGIN HIDDEN TESTS\n" * 60_000 + "### END HIDDEN TESTS\n" + c.source
    _write(folder, nb)


# ---- class 5: files that are not regular files of the submission

def symlinked_notebook(folder: Path, ctx: Context) -> None:
    folder.mkdir(parents=True)
    (folder / f"{NB}.ipynb").symlink_to(SOURCE / f"{NB}.ipynb")  # the instructor's source, solutions and hidden tests
    (folder / "timestamp.txt").write_text(STAMP)


def hardlinked_notebook(folder: Path, ctx: Context) -> None:
    folder.mkdir(parents=True)
    kept = ctx.outside / "instructor-copy.ipynb"  # a file outside the submission, on the same file system
    if not kept.exists():
        shutil.copyfile(SOURCE / f"{NB}.ipynb", kept)
    os.link(kept, folder / f"{NB}.ipynb")
    (folder / "timestamp.txt").write_text(STAMP)


def fifo_notebook(folder: Path, ctx: Context) -> None:
    folder.mkdir(parents=True)
    os.mkfifo(folder / f"{NB}.ipynb")
    (folder / "timestamp.txt").write_text(STAMP)


def linked_data(folder: Path, ctx: Context) -> None:
    _write(folder, solved())
    (folder / "data.csv").symlink_to("/etc/passwd")  # would be handed to the notebook, and copied into its feedback
    os.mkfifo(folder / "stream.csv")


CASES: dict[str, WriterCase] = {
    "stamp_garbage": WriterCase(stamp_garbage, 5, flag="submission time unreadable (timestamp.txt holds"),
    "stamp_fifo": WriterCase(stamp_fifo, 5, flag="timestamp.txt refused: it is a FIFO"),
    # the worker's writer replaces the lone surrogate (U+FFFD) before it sends the flag: graded in full, flagged
    "surrogate_flag": WriterCase(surrogate_flag, 5, flag="\ufffd"),
    "surrogate_output": WriterCase(surrogate_output, 5),
    "xss_outputs": WriterCase(xss_outputs, 5, xss=True),
    "xss_markdown": WriterCase(xss_markdown, 5, reason="raised <img src=x onerror=", xss=True),
    "hidden_unterminated": WriterCase(hidden_unterminated, 5),
    "hidden_nested": WriterCase(hidden_nested, 5),
    "symlinked_notebook": WriterCase(symlinked_notebook, 0, flag=f"{NB}.ipynb is refused: it is a symbolic link",
                                     reason="symbolic link"),
    "hardlinked_notebook": WriterCase(hardlinked_notebook, 0, flag="is a hard link to a file outside the submission"),
    "fifo_notebook": WriterCase(fifo_notebook, 0, flag="is a FIFO (named pipe)"),
    "linked_data": WriterCase(linked_data, 5, flag="submission file data.csv refused: it is a symbolic link"),
}
HONEST = {"honest_ada": WriterCase(honest, 5), "honest_bob": WriterCase(honest, 5)}
SYMLINKED_FOLDER = "symlinked_folder"  # submitted/symlinked_folder -> honest_ada's folder: refused whole, flagged
