"""Submissions that try to outgrow, outlive or reach past their notebook (issue 19): memory no limit counts, a channel
between notebooks, a process that resets its death signal, output past any per-cell cap, a frame that never ends,
text no gradebook can store, frames reached without an audit event. Graded with the rest of corpus.py in one batch.

Processes they start carry `pwned-` in their command line, and files they find are marked `pwned-*`, as escapes.py's.
"""

from __future__ import annotations

import nbformat

from .corpus import FULL, ZERO, Case, append, scores, solved
from .escapes import SURVIVOR

# ---------------------------------------------------------------- memory that no limit counts

MEMFD_HOLD = '''import os
held = []
try:
    fd = os.memfd_create("hold")
    for _ in range(3000):
        os.write(fd, b"m" * 2**20)
    held.append(fd)
except OSError as exc:
    print("memfd refused:", exc.errno)'''

PIPE_HOLD = '''import fcntl, os
held, total = [], 0
try:
    while True:  # every pipe it may open (RLIMIT_NOFILE), each grown to the most it may hold, then filled
        r, w = os.pipe()
        held += [r, w]
        try:
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 2**20)
        except OSError:
            pass
        os.set_blocking(w, False)
        try:
            while True:
                total += os.write(w, b"p" * 2**16)
        except BlockingIOError:
            pass
except OSError as exc:
    print("pipes stopped:", exc.errno)
print("pipe bytes held:", total)
for fd in held:
    os.close(fd)'''

DEV_FILL = '''import os
for folder in ("/dev", "/dev/shm", "/tmp"):
    try:
        with open(os.path.join(folder, "hold.bin"), "wb") as f:
            for _ in range(3000):
                f.write(b"d" * 2**20)
    except OSError as exc:
        print(folder, "stopped:", exc.errno)'''

# ---------------------------------------------------------------- a channel between notebooks

LEAVES = '''for path in ("/dev/shm/pwned-note", "/tmp/pwned-note", "/dev/pwned-note", "/scratch/../tmp/pwned-note"):
    try:
        open(path, "w").write("from a classmate")
    except OSError:
        pass'''

READS = '''import os
found = [p for p in ("/dev/shm/pwned-note", "/tmp/pwned-note", "/dev/pwned-note") if os.path.exists(p)]
if found:
    raise SystemExit(f"a classmate's note reached this notebook: {found}")'''

# ---------------------------------------------------------------- a process that survives its notebook

DEATHSIG_SURVIVOR = f'''import ctypes, os, sys
if os.fork() == 0:
    ctypes.CDLL(None).prctl(1, 0)  # PR_SET_PDEATHSIG 0
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(1, 0)
        os.execv(sys.executable, [sys.executable, "-c", {SURVIVOR.replace("{tag}", "deathsig").replace("{sleep}", "331")!r}])
    os._exit(0)'''

IGNORING_SURVIVOR = f'''import ctypes, os, signal, sys
if os.fork() == 0:
    ctypes.CDLL(None).prctl(1, 0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    os.execv(sys.executable, [sys.executable, "-c", {SURVIVOR.replace("{tag}", "ignoring").replace("{sleep}", "337")!r}])'''

# ---------------------------------------------------------------- output past any per-cell cap


def many_cells(code: str, count: int = 60) -> nbformat.NotebookNode:
    """Notebook 02 solved, with `count` extra cells each printing just under the per-cell cap, at its end."""
    nb = solved()
    nb.cells += [nbformat.v4.new_code_cell(code) for _ in range(count)]
    return nb


PRINT_UNDER_CAP = "print('p' * 990_000)"
DISPLAY_UNDER_CAP = "from IPython.display import HTML, display\ndisplay(HTML('<b>' + 'h' * 990_000 + '</b>'))"

# ---------------------------------------------------------------- a read with no deadline, text no one can store

RAW_CHANNEL = '''import os, stat, struct, time
def channel_fds():
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                yield fd
        except OSError:
            pass
for fd in channel_fds():
    os.write(fd, {payload})
{after}'''

STALLED_FRAME = RAW_CHANNEL.format(payload='struct.pack("!i", 4096) + b\'{"op": "cell"\'', after="os.kill(os.getpid(), 19)  # SIGSTOP")
HUGE_LENGTH = RAW_CHANNEL.format(payload='struct.pack("!i", 2**31 - 1)', after="")
SURROGATE_FRAME = RAW_CHANNEL.format(
    payload='(lambda d: struct.pack("!i", len(d)) + d)(b\'{"op": "audit", "event": "\\\\ud800", "detail": "x", "where": "y", "seq": 1}\')',
    after="")
PRINTS_ODD_TEXT = "print('lone \\ud800 surrogate and a NUL \\x00 byte')\nimport sys\nsys.stderr.write('\\udcff\\n')"

# ---------------------------------------------------------------- frames reached without an audit event

SIGNAL_FRAME = '''import signal
def handler(signum, frame):
    while frame is not None:  # a handler is handed a frame: up from it to the worker's own locals
        writer = frame.f_locals.get("writer")
        if writer is not None and hasattr(writer, "missing"):
            real = writer.missing
            writer.missing = lambda targets: real([])  # "nothing is missing", whatever the notebook lacks
            return
        frame = frame.f_back
signal.signal(signal.SIGUSR1, handler)
signal.raise_signal(signal.SIGUSR1)'''

FROZEN_KIT = '''import signal
def handler(signum, frame):
    while frame is not None:
        kit = frame.f_locals.get("kit")
        if kit is not None and hasattr(kit, "observe"):
            object.__setattr__(kit, "observe", lambda *args: {})  # a frozen dataclass: set anyway
            return
        frame = frame.f_back
signal.signal(signal.SIGUSR2, handler)
signal.raise_signal(signal.SIGUSR2)'''

CASES: dict[str, Case] = {
    "memfd_hold": Case(lambda: append(solved(), "ex_02_value_class", MEMFD_HOLD), FULL),
    "pipe_hold": Case(lambda: append(solved(), "ex_02_value_class", PIPE_HOLD), FULL),
    "dev_fill": Case(lambda: append(solved(), "ex_02_value_class", DEV_FILL), FULL, "", "open /dev/hold.bin"),
    "leaves_a_note": Case(lambda: append(solved(), "ex_02_value_class", LEAVES), FULL, "", "open /dev/shm/pwned-note"),
    "reads_a_note": Case(lambda: append(solved(), "ex_02_value_class", READS), FULL),
    "deathsig_survivor": Case(lambda: append(solved(), "ex_02_value_class", DEATHSIG_SURVIVOR), FULL, "", "os.fork"),
    "ignoring_survivor": Case(lambda: append(solved(), "ex_02_value_class", IGNORING_SURVIVOR), FULL, "", "os.fork"),
    "many_printing_cells": Case(lambda: many_cells(PRINT_UNDER_CAP), FULL, "outputs dropped"),
    "many_display_cells": Case(lambda: many_cells(DISPLAY_UNDER_CAP), FULL, "outputs dropped"),
    "stalled_frame": Case(lambda: append(solved(), "ex_02_add", STALLED_FRAME), scores(1, 0, 0, 0), "broke the grading protocol",
                          "stopped in the middle of a message"),
    "huge_length": Case(lambda: append(solved(), "ex_02_add", HUGE_LENGTH), scores(1, 0, 0, 0), "broke the grading protocol",
                        "announced a message of 2147483647 bytes"),
    "surrogate_frame": Case(lambda: append(solved(), "ex_02_add", SURROGATE_FRAME), scores(1, 0, 0, 0),
                            "broke the grading protocol", "no gradebook can store"),
    "prints_odd_text": Case(lambda: append(solved(), "ex_02_value_class", PRINTS_ODD_TEXT), FULL),  # replaced by U+FFFD
    "signal_frame": Case(lambda: append(solved(), "ex_02_value_class", SIGNAL_FRAME), ZERO, "tampered with the grader",
                         "the worker's Writer.missing"),
    "frozen_kit": Case(lambda: append(solved(), "ex_02_value_class", FROZEN_KIT), ZERO, "tampered with the grader",
                            "the worker's ProbeKit.observe"),
}
