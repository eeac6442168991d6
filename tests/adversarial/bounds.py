"""Submissions that try to outgrow, outlive or reach past their notebook (issue 19): memory no limit counts, a channel
between notebooks, a process that resets its death signal, output past any per-cell cap, a frame that never ends,
text no gradebook can store, frames reached without an audit event. Graded with the rest of corpus.py in one batch.

Processes they start carry `corpus.TOKEN` (made once per run) in their command line, and files they find are marked
`pwned-*`, as escapes.py's. Two sets, written apart: the first instances of each class, then more of each (a channel
through a POSIX message queue and through files in $HOME and the folders around the notebook; POSIX and System V
shared memory and a sparse file filled; a stopped, a traced and a re-forking survivor; notebooks that load the
machine while classmates start; stderr, execute_result, picture and display-update floods; a frame dripped a byte a
second, invalid JSON, deep nesting, a NUL, a message out of order; generator, traceback and coroutine frames).
A reader looks for its note for a few seconds, first thing in its cell: should a note ever reach it, the cell stops
before `Value` exists and the notebook loses its points.
"""

from __future__ import annotations

import nbformat

from .corpus import FULL, TOKEN, ZERO, Case, append, prepend, scores, solved
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
NEWLINES_UNDER_CAP = "print('\\n' * 490_000)"  # ~1 MB as compact JSON ("\\n" each), ~12 bytes a line as written
DISPLAY_UNDER_CAP = "from IPython.display import HTML, display\ndisplay(HTML('<b>' + 'h' * 990_000 + '</b>'))"

# ---------------------------------------------------------------- a read with no deadline, text no one can store

# the worker's channel: learner code finds it among its descriptors, to write raw frames
CHANNEL_FDS = '''def channel_fds():
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                yield fd
        except OSError:
            pass
'''

RAW_CHANNEL = '''import os, stat, struct, time
''' + CHANNEL_FDS + '''for fd in channel_fds():
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
    "reads_a_note": Case(lambda: prepend(solved(), "ex_02_value_class", READS), FULL),
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
                         "the worker's Sender.missing"),
    "frozen_kit": Case(lambda: append(solved(), "ex_02_value_class", FROZEN_KIT), ZERO, "tampered with the grader",
                            "the worker's ProbeKit.observe"),
}


# ================================================================ more instances of each class

# ---------------------------------------------------------------- memory that no limit counts

POSIX_SHM_HOLD = """import _posixshmem, mmap, os
held = 0
try:  # a POSIX shared memory object (shm_open: a file in /dev/shm), grown, mapped, then written through its file
    shm = _posixshmem.shm_open("/hold", os.O_CREAT | os.O_RDWR, 0o600)
    os.ftruncate(shm, 200 * 2**20)
    view = mmap.mmap(shm, 200 * 2**20)
    fd = os.open("/dev/shm/hold", os.O_WRONLY)
    while held < 200 * 2**20:
        held += os.write(fd, b"s" * 2**20)
except OSError as exc:
    print("shm stopped:", exc.errno)
print("held MiB:", held // 2**20)"""

SYSV_HOLD = """import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
for name, call in (("shmget", lambda: libc.shmget(0x5EED, 2**30, 0o1666)), ("msgget", lambda: libc.msgget(0x5EED, 0o1666))):
    print(name, call(), ctypes.get_errno())  # System V memory under a fixed key: refused
try:
    a, b = socket.socketpair()  # socket buffers: kernel memory
    a.setblocking(False)
    while True:
        a.send(b"k" * 2**16)
except OSError as exc:
    print("socketpair stopped:", exc.errno)
print("held MiB:", 0)"""

SPARSE_FILL = """import os
held = 0
try:
    for n in range(8):  # sparse files in the notebook's own folder, each under the file size limit, then filled
        with open(f"sparse{n}.bin", "wb") as f:
            f.truncate(250 * 2**20)
            for offset in range(0, 250 * 2**20, 2**20):
                f.seek(offset)
                held += f.write(b"f" * 2**20)
except OSError as exc:
    print("sparse stopped:", exc.errno)
print("held MiB:", held // 2**20)"""

# ---------------------------------------------------------------- a channel between notebooks (a second mechanism)

MQ_NAME = f"/{TOKEN}-mq"
MQ_LEAVES = f"""import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.mq_open({MQ_NAME.encode()!r}, os.O_CREAT | os.O_WRONLY, 0o666, None)  # a POSIX message queue, left behind
if fd >= 0:
    libc.mq_send(fd, b"from a classmate", 16, 0)"""

MQ_READS = f"""import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
for _ in range(40):  # the leaver is graded before or beside this notebook: look for a few seconds
    if libc.mq_open({MQ_NAME.encode()!r}, os.O_RDONLY | os.O_NONBLOCK, 0, None) >= 0:
        raise SystemExit("a classmate's message queue reached this notebook")
    time.sleep(0.1)"""

AROUND = f"""import os
home, here = os.path.expanduser("~"), os.getcwd()
NOTES = [os.path.join(folder, "{TOKEN}-note") for folder in (
    home, os.path.join(home, ".cache"), os.path.dirname(here), os.path.dirname(os.path.dirname(here)), "..", "/var/tmp",
    "/run", "/grader", "/tmp/matplotlib", "/")]"""

AROUND_LEAVES = AROUND + """
for path in NOTES:
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        open(path, "w").write("from a classmate")
    except OSError:
        pass"""

AROUND_READS = AROUND + """
import time
for _ in range(40):
    found = [p for p in NOTES if os.path.exists(p)]
    if found:
        raise SystemExit(f"a classmate's note reached this notebook: {found}")
    time.sleep(0.1)"""

# ---------------------------------------------------------------- a process that survives its notebook

STOPS_ITSELF = "import os; os.kill(os.getpid(), 19)\n" + SURVIVOR.replace("{tag}", "stopped").replace("{sleep}", "341")
STOPPED_SURVIVOR = f"""import ctypes, os, sys
if os.fork() == 0:
    ctypes.CDLL(None).prctl(1, 0)
    os.setsid()
    os.execv(sys.executable, [sys.executable, "-c", {STOPS_ITSELF!r}])"""

TRACED_SURVIVOR = f"""import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if os.fork() == 0:
    libc.prctl(1, 0)
    os.setsid()
    child = os.fork()
    if child == 0:
        libc.prctl(1, 0)
        libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME: stopped at exec, traced by its parent
        os.execv(sys.executable, [sys.executable, "-c", {SURVIVOR.replace("{tag}", "traced").replace("{sleep}", "343")!r}])
    os.waitpid(child, 0)
    libc.ptrace(7, child, None, None)  # PTRACE_CONT
    while True:
        os.waitpid(child, 0)"""

REFORKS = f"""# {TOKEN}
import os, time
os.setpgid(0, 0)
while True:  # a new pid every 50 ms, in a process group of its own: a kill by pid aims at a process already gone
    if os.fork() != 0:
        os._exit(0)
    time.sleep(0.05)"""

REFORKING_SURVIVOR = f"""import ctypes, os, sys
if os.fork() == 0:
    ctypes.CDLL(None).prctl(1, 0)
    os.execv(sys.executable, [sys.executable, "-c", {REFORKS!r}])"""

# ---------------------------------------------------------------- one slow start kills classmates: a loaded machine

LOADS_THE_MACHINE = """import os, time
end = time.monotonic() + 6
for _ in range(200):  # busy processes while classmates' workers start beside it (its pids cgroup allows 256)
    try:
        if os.fork() == 0:
            while time.monotonic() < end:
                pass
            os._exit(0)
    except OSError:
        break
while time.monotonic() < end + 1:
    time.sleep(0.5)"""

FORK_BOMB = """import os, time
end = time.monotonic() + 6
if os.fork() == 0:
    while time.monotonic() < end:  # every process forks again, as fast as it can, until none more is allowed
        try:
            os.fork()
        except OSError:
            pass
    os._exit(0)
while time.monotonic() < end + 1:
    time.sleep(0.5)"""

# ---------------------------------------------------------------- output past any per-cell cap

STDERR_UNDER_CAP = "import sys\nsys.stderr.write('e' * 990_000)"
RESULT_UNDER_CAP = "'r' * 990_000"
PICTURE_UNDER_CAP = ("from IPython.display import display\n"
                     "display({'image/png': 'iVBORw0KGgo' * 45_000, 'application/json': {'n': [1] * 100_000}}, raw=True)")
DISPLAY_UPDATES = """from IPython.display import display
handle = display({"text/plain": "start"}, raw=True, display_id=True)
for i in range(2000):  # one display updated again and again: 100 MB of updates
    handle.update({"text/plain": str(i % 10) * 50_000}, raw=True)"""

# ---------------------------------------------------------------- a read with no deadline, text no one can store

RAW_FRAMES = """import json, os, stat, struct, time
""" + CHANNEL_FDS + """def frame(data):
    return struct.pack("!i", len(data)) + data
fds = list(channel_fds())
for fd in fds:
    os.write(fd, {payload})
{after}"""

DRIP_FRAME = RAW_FRAMES.format(payload='struct.pack("!i", 4096)', after="""for _ in range(4096):  # a byte a second, never done
    for fd in fds:
        os.write(fd, b" ")
    time.sleep(1)""")
BAD_JSON_FRAME = RAW_FRAMES.format(payload='frame(b"{this is not: json, at all}")', after="")
DEEP_FRAME = RAW_FRAMES.format(payload='frame(b"[" * 100_000 + b"]" * 100_000)', after="")
NUL_FRAME = RAW_FRAMES.format(
    payload='frame(json.dumps({"op": "audit", "event": "a NUL \\x00 here", "detail": "x", "where": "y", "seq": 1}).encode())',
    after="")
OUT_OF_ORDER_FRAME = RAW_FRAMES.format(payload='b"".join(frame(json.dumps({"op": "done", "seq": n}).encode()) for n in range(1, 40))',
                                       after="")

# ---------------------------------------------------------------- frames reached without an audit event

GENERATOR_FRAME = """def walk():
    frame = steps.gi_frame.f_back  # the running generator's frame: up from it to the worker's own locals
    while frame is not None:
        writer = frame.f_locals.get("writer")
        if writer is not None and hasattr(writer, "missing"):
            real = writer.missing
            writer.missing = lambda targets: real([])
            return
        frame = frame.f_back
def stepper():
    walk()
    yield
steps = stepper()
next(steps)"""

TRACEBACK_FRAME = """def climb():
    try:
        raise ValueError("a mistake, caught")
    except ValueError as exc:
        frame = exc.__traceback__.tb_frame  # this very frame, still running: up from it
    while frame is not None:
        writer = frame.f_locals.get("writer")
        if writer is not None and hasattr(writer, "missing"):
            writer.missing = lambda targets: []
            return
        frame = frame.f_back
climb()"""

COROUTINE_FRAME = """async def climb():
    frame = job.cr_frame.f_back
    while frame is not None:
        guard = frame.f_locals.get("guard")
        if guard is not None and hasattr(guard, "views"):
            guard.views = {}  # the tamper guard's snapshot, replaced on the instance: nothing would look changed
            return
        frame = frame.f_back
job = climb()
try:
    job.send(None)
except StopIteration:
    pass
import builtins
builtins.abs = lambda x: 0.0"""

MORE: dict[str, Case] = {
    "posix_shm_hold": Case(lambda: append(solved(), "ex_02_value_class", POSIX_SHM_HOLD), FULL, "", "open /dev/shm/hold"),
    "sysv_shm_hold": Case(lambda: append(solved(), "ex_02_value_class", SYSV_HOLD), FULL, "", "ctypes.dlopen"),
    "sparse_fill": Case(lambda: append(solved(), "ex_02_value_class", SPARSE_FILL), FULL),
    # leaver and reader: students are graded in the order of their names, two at a time; each reader also waits
    "channel_mq_leaves": Case(lambda: append(solved(), "ex_02_value_class", MQ_LEAVES), FULL, "", "ctypes.dlopen"),
    "channel_mq_reads": Case(lambda: prepend(solved(), "ex_02_value_class", MQ_READS), FULL, "", "ctypes.dlopen"),
    "channel_around_leaves": Case(lambda: append(solved(), "ex_02_value_class", AROUND_LEAVES), FULL, "",
                                   f"open /{TOKEN}-note"),
    "channel_around_reads": Case(lambda: prepend(solved(), "ex_02_value_class", AROUND_READS), FULL),
    # each reader run after its own note in the same notebook: it finds it (the readers above could fail)
    "channel_mq_self_check": Case(lambda: prepend(solved(), "ex_02_value_class", MQ_LEAVES + "\n" + MQ_READS), ZERO,
                                  "called sys.exit()", "ctypes.dlopen"),
    "channel_around_self_check": Case(lambda: prepend(solved(), "ex_02_value_class", AROUND_LEAVES + "\n" + AROUND_READS),
                                      ZERO, "called sys.exit()", f"open /{TOKEN}-note"),
    "stopped_survivor": Case(lambda: append(solved(), "ex_02_value_class", STOPPED_SURVIVOR), FULL, "", "os.fork"),
    "traced_survivor": Case(lambda: append(solved(), "ex_02_value_class", TRACED_SURVIVOR), FULL, "", "os.fork"),
    "reforking_survivor": Case(lambda: append(solved(), "ex_02_value_class", REFORKING_SURVIVOR), FULL, "", "os.fork"),
    "loads_the_machine": Case(lambda: append(solved(), "ex_02_value_class", LOADS_THE_MACHINE), FULL, "", "os.fork"),
    "fork_bomb": Case(lambda: append(solved(), "ex_02_value_class", FORK_BOMB), FULL, "", "os.fork"),
    "many_stderr_cells": Case(lambda: many_cells(STDERR_UNDER_CAP), FULL, "outputs dropped"),
    "many_result_cells": Case(lambda: many_cells(RESULT_UNDER_CAP), FULL, "outputs dropped"),
    "many_picture_cells": Case(lambda: many_cells(PICTURE_UNDER_CAP), FULL, "outputs dropped"),
    "many_newline_cells": Case(lambda: many_cells(NEWLINES_UNDER_CAP), FULL, "outputs dropped"),
    "display_updates": Case(lambda: append(solved(), "ex_02_value_class", DISPLAY_UPDATES), FULL),
    "drip_frame": Case(lambda: append(solved(), "ex_02_add", DRIP_FRAME), scores(1, 0, 0, 0), "broke the grading protocol",
                       "stopped in the middle of a message"),
    "bad_json_frame": Case(lambda: append(solved(), "ex_02_add", BAD_JSON_FRAME), scores(1, 0, 0, 0),
                           "broke the grading protocol", "not a JSON message"),
    "deep_frame": Case(lambda: append(solved(), "ex_02_add", DEEP_FRAME), scores(1, 0, 0, 0), "broke the grading protocol",
                       "not a JSON message"),
    "nul_frame": Case(lambda: append(solved(), "ex_02_add", NUL_FRAME), scores(1, 0, 0, 0), "broke the grading protocol",
                      "no gradebook can store"),
    "out_of_order_frame": Case(lambda: append(solved(), "ex_02_add", OUT_OF_ORDER_FRAME), scores(1, 0, 0, 0),
                               "broke the grading protocol", "'done' message"),
    "generator_frame": Case(lambda: append(solved(), "ex_02_value_class", GENERATOR_FRAME), ZERO, "tampered with the grader",
                            "generator.gi_frame"),
    "traceback_frame": Case(lambda: append(solved(), "ex_02_value_class", TRACEBACK_FRAME), ZERO, "tampered with the grader",
                            "traceback.tb_frame"),
    "coroutine_frame": Case(lambda: append(solved(), "ex_02_value_class", COROUTINE_FRAME), ZERO, "tampered with the grader",
                            "coroutine.cr_frame"),
}
CASES.update(MORE)
HELD_MIB = {"posix_shm_hold": 64, "sparse_fill": 512, "sysv_shm_hold": 0}  # what each may hold at most: its mount's size
FRAME_ROUTES = ("generator_frame", "traceback_frame", "coroutine_frame")  # also flagged for what they replaced
