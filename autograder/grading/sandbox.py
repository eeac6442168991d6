"""The OS sandbox around every notebook's worker: one bubblewrap sandbox per batch, a fork server inside it,
and per notebook its own user, PID, mount, network and IPC namespaces.

Grader side (`Sandbox`, `Worker`): stage the worker-side code into a read-only folder (never the repository, the
course or the answer side), start `bwrap` with a clean environment and a read-only runtime, and ask the fork
server for one worker per notebook over a control socket; each worker's channel is a fresh socketpair whose
far end travels with SCM_RIGHTS. Sandbox side (`serve`): preload numpy, matplotlib and IPython once, then per
notebook fork a process that enters new namespaces, mounts a private tmpfs scratch (and hides /proc), and forks
the learner's process with no capabilities as the namespace's PID 1 (one fork fewer than a separate init: ~13 ms
of CPU per notebook). When it exits, or is killed, the kernel kills everything the notebook started. Only the
standard library is imported here at module level: this file runs inside the sandbox too.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import importlib
import itertools
import json
import os
import py_compile
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

INSIDE = "/grader"  # where the staged worker-side code is mounted, read-only
SCRATCH = "/scratch"  # a notebook's working directory and HOME: its own tmpfs
SANDBOX_UID = 65534  # the uid inside the sandbox (nobody), whoever runs the grader
START_TIMEOUT = 60.0  # seconds the fork server may take to import numpy, matplotlib and IPython (~1 s alone)
SPAWN_TIMEOUT = 10.0  # seconds the fork server may take to start one worker (~10 ms)
KILL_TIMEOUT = 3.0  # seconds a killed worker may take to be reported gone before its whole sandbox is killed
SCRATCH_BYTES = 512 * 2**20  # each notebook's tmpfs scratch (its submission's files and whatever it writes)
NPROC = 256  # RLIMIT_NPROC of a notebook: best effort only (measured here, grading as root: not enforced)
# The worker side: the probes (no answers: they build graphs from a case and read numbers back) and the worker.
WORKER_SIDE = ("settings.py", "probes/__init__.py", "probes/engine.py", "probes/exercises.py", "probes/graphs.py",
               "probes/net.py", "probes/safe.py", "grading/__init__.py", "grading/worker.py", "grading/channel.py",
               "grading/audit.py", "grading/sandbox.py")
PRELOAD = ("numpy", "matplotlib.pyplot", "IPython.core.interactiveshell", "tqdm", "autograder", "autograder.workbook",
           "autograder.settings", "autograder.grading.worker", "autograder.grading.audit", "autograder.probes")
ENVIRONMENT = {  # everything a notebook's process sees of the environment
    "HOME": SCRATCH,
    "LANG": "C.UTF-8",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "MPLCONFIGDIR": "/tmp/matplotlib",
    "NBGRADER_EXECUTION": "autograde",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


UNSANDBOXED = "UNSANDBOXED: graded with --unsafe-no-sandbox, learner code ran as the grader's user"


class Unavailable(Exception):
    """No sandbox can start on this machine; the message says why and how to enable it, in one line."""


class SandboxFailed(Exception):
    """The sandbox stopped answering (its fork server died or hung); the message is the reason."""


# ------------------------------------------------------------------ grader side: what goes in


def _package() -> Path:
    return Path(__file__).resolve().parent.parent


def stage(dest: Path) -> None:
    """Copy the worker-side code, the teaching aids and the stand-in `autograder` a notebook imports into `dest`, for a read-only mount."""
    pkg = _package()
    out = dest / "autograder"
    (out / "grading").mkdir(parents=True)
    (out / "probes").mkdir()
    for rel in WORKER_SIDE:
        if (pkg / rel).is_file():
            shutil.copyfile(pkg / rel, out / rel)
    shutil.copyfile(pkg / "grading" / "standin" / "__init__.py", out / "__init__.py")
    shutil.copyfile(pkg / "grading" / "standin" / "workbook.py", out / "workbook.py")
    # The teaching aids as they are (with PyTorch's recorded numbers: shown to every learner, read by no check)
    shutil.copytree(pkg / "aids", out / "aids", ignore=shutil.ignore_patterns("__pycache__"))
    cache = Path(os.environ.get("MPLCONFIGDIR") or Path.home() / ".cache" / "matplotlib")
    fonts = sorted(cache.glob("fontlist-*.json")) if cache.is_dir() else []
    if fonts:  # matplotlib's font list: without it the fork server spends seconds scanning the system's fonts
        (dest / "matplotlib").mkdir()
        shutil.copyfile(fonts[-1], dest / "matplotlib" / fonts[-1].name)
    # Bytecode next to the staged code (the mount is read-only, so the fork server could not cache it): compiled
    # here, while the grader imports nbgrader and waits for the server, not inside its preload (~70 ms)
    for source in out.rglob("*.py"):
        py_compile.compile(str(source), doraise=True)
    for path in dest.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    dest.chmod(0o755)


def runtime_paths() -> list[str]:
    """The Python runtime and installed libraries the worker needs, read-only: never the repository or the course."""
    import sysconfig

    paths = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths |= {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    keep: list[str] = []
    for p in sorted(os.path.realpath(x) for x in paths if x and os.path.isdir(x)):
        if not any(p == k or p.startswith(k + os.sep) for k in keep):
            keep.append(p)
    return keep


# Every notebook gets its own empty tmpfs on these: a runtime that lives below one of them (a checkout in /tmp, say)
# is mounted below RELOCATED instead, and the interpreter started from there.
MASKED = ("/tmp", "/dev/shm", SCRATCH, "/proc")
RELOCATED = "/runtime"


def inside_path(path: str) -> str:
    """Where a runtime path is mounted inside the sandbox: itself, or below RELOCATED if a notebook's tmpfs would hide it."""
    return RELOCATED + path if any(path == m or path.startswith(m + os.sep) for m in MASKED) else path


def bwrap_argv(bwrap: str, staged: Path, control_fd: int) -> list[str]:
    """The bubblewrap command: new namespaces, a clean environment, read-only system and runtime, no grader files."""
    argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", SCRATCH, "--chdir", "/tmp",
            "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for etc in ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime"):
        if os.path.exists(etc):
            argv += ["--ro-bind", etc, etc]
    for path in runtime_paths():
        if not path.startswith("/usr/"):
            argv += ["--ro-bind", path, inside_path(path)]
    import sysconfig

    for key in ("purelib", "platlib"):  # a non-editable install puts the whole grader here: hide it
        installed = Path(sysconfig.get_paths()[key]) / "autograder"
        if installed.is_dir():
            argv += ["--tmpfs", inside_path(str(installed))]
    argv += ["--ro-bind", str(staged), INSIDE, "--remount-ro", "/"]  # bubblewrap's root tmpfs too: nothing to plant
    python = inside_path(sys.executable)
    for key, value in {**ENVIRONMENT, "PATH": f"{os.path.dirname(python)}:/usr/local/bin:/usr/bin:/bin"}.items():
        argv += ["--setenv", key, value]
    boot = f"import sys; sys.path.insert(0, {INSIDE!r}); from autograder.grading import sandbox; sandbox.serve({control_fd})"
    return [*argv, "--", python, "-I", "-c", boot]


def unavailable_reason() -> str | None:
    """Why no sandbox can start here (one line with how to enable it), or None."""
    how = "or grade anyway without it: --unsafe-no-sandbox"
    if not sys.platform.startswith("linux"):
        return f"the grading sandbox needs Linux (bubblewrap and user namespaces), not {sys.platform}; {how}"
    if shutil.which("bwrap") is None:
        return f"bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap); {how}"
    return None


# ------------------------------------------------------------------ grader side: the sandbox and its workers


STAGING_PREFIX = "autograder-sandbox-"  # + the grader's pid: a staging whose grader is gone can be removed


def remove_abandoned_stagings(root: Path | None = None) -> list[Path]:
    """Remove staged worker code left by graders that were killed before they could (SIGKILL, a lost machine)."""
    removed = []
    for path in Path(root or tempfile.gettempdir()).glob(f"{STAGING_PREFIX}*"):
        pid = path.name[len(STAGING_PREFIX):].split("-", 1)[0]
        try:
            if not pid.isdigit() or path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
            continue  # its grader still runs (or the pid was reused: kept, to be safe)
        except ProcessLookupError:
            pass
        except OSError:  # not ours to judge (another user's pid), or removed meanwhile
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def start_failure(detail: str) -> str:
    """One line on why the sandbox did not start, with the remedy that fits what bubblewrap said."""
    if "execvp" in detail or "No such file" in detail:  # the runtime itself is not where the sandbox mounts it
        how = ("the Python runtime could not be started inside it: is the virtual environment a symlink, or on a path "
               "bubblewrap cannot mount? Use a venv at its real path")
    else:
        how = ("bubblewrap needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, and on "
               "Ubuntu kernel.apparmor_restrict_unprivileged_userns=0)")
    return f"the grading sandbox cannot start here ({detail[:200]}): {how}; or grade anyway: --unsafe-no-sandbox"


class Sandbox:
    """One bubblewrap sandbox running the fork server; `launch` starts a notebook's worker in it."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.control: socket.socket | None = None
        remove_abandoned_stagings()
        self.staged = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-"))
        self.lock = threading.Lock()  # one request at a time on the control socket
        self.cond = threading.Condition()
        self.replies: dict[int, dict[str, Any]] = {}  # worker id -> {"spawned": bool, "status": int | None}
        self.ids = itertools.count(1)
        self.dead = ""  # why the sandbox stopped ("" while it runs)
        self.ready: dict[str, Any] = {}
        self.errors: Any = None  # bubblewrap's stderr (a temporary file): why it could not start
        self.t0 = self.started = 0.0

    def spawn(self) -> Sandbox:
        """Start bubblewrap and its fork server, without waiting for the preload (`start` waits)."""
        reason = unavailable_reason()
        if reason:
            raise Unavailable(reason)
        self.t0 = time.perf_counter()
        stage(self.staged)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(bwrap_argv(shutil.which("bwrap") or "bwrap", self.staged, theirs.fileno()),
                                     pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.errors, cwd="/")
        theirs.close()
        self.control = ours
        threading.Thread(target=self._read, name="sandbox-control", daemon=True).start()
        return self

    def start(self) -> Sandbox:
        """Start (unless `spawn` did) and wait until the fork server has preloaded; Unavailable when it cannot start here."""
        if self.proc is None:
            self.spawn()
        with self.cond:
            self.cond.wait_for(lambda: self.ready or self.dead, START_TIMEOUT)
        if not self.ready.get("ok"):
            self.errors.seek(0)
            said = self.errors.read().decode(errors="replace").strip().splitlines()
            detail = self.ready.get("error") or (said[-1] if said else self.dead or "no answer within the time limit")
            self.close()
            raise Unavailable(start_failure(detail))
        self.started = time.perf_counter() - self.t0
        return self

    def _read(self) -> None:
        """Dispatch the fork server's replies: ready, spawned, exited."""
        assert self.control is not None
        while True:
            try:
                data = self.control.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            try:
                msg = json.loads(data)
                op = msg["op"]
            except (ValueError, KeyError, TypeError):
                continue
            with self.cond:
                if op == "ready":
                    self.ready = msg
                elif op in ("spawned", "exited") and isinstance(msg.get("id"), int):
                    slot = self.replies.setdefault(msg["id"], {"spawned": False, "status": None})
                    slot["spawned"] = True
                    if op == "exited":
                        slot["status"] = msg.get("status")
                self.cond.notify_all()
        with self.cond:
            self.dead = self.dead or "the sandbox's fork server exited"
            self.cond.notify_all()

    def _request(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        if self.control is None or self.dead:
            raise SandboxFailed(self.dead or "the sandbox is closed")
        try:
            with self.lock:
                socket.send_fds(self.control, [json.dumps(message).encode()], fds or [])
        except OSError as exc:
            raise SandboxFailed(f"the sandbox stopped answering ({exc.strerror})") from None

    def launch(self, start: dict[str, Any]) -> Worker:
        """A new worker running `start` (the plan and the submission's files); SandboxFailed if the server is stuck."""
        ident = next(self.ids)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._request({"op": "spawn", "id": ident}, [theirs.fileno()])
        finally:
            theirs.close()
        with self.cond:
            ok = self.cond.wait_for(lambda: self.replies.get(ident, {}).get("spawned") or self.dead, SPAWN_TIMEOUT)
        if not ok or self.dead:
            ours.close()
            raise SandboxFailed(self.dead or f"the sandbox did not start a worker within {SPAWN_TIMEOUT:g} s")
        conn = Connection(ours.detach())
        worker = Worker(self, ident, conn)
        try:
            conn.send_bytes(json.dumps(start).encode())
        except OSError:
            pass  # the worker already died: the grader reads why from its first recv
        return worker

    def status(self, ident: int, timeout: float) -> int | None:
        """The worker's exit status (negative: killed by that signal), or None while it runs."""
        with self.cond:
            self.cond.wait_for(lambda: self.replies.get(ident, {}).get("status") is not None or self.dead, timeout)
            return self.replies.get(ident, {}).get("status")

    def kill(self, ident: int, wait: bool = True) -> None:
        """Kill one worker and everything it started; if the server does not confirm, kill the whole sandbox.

        wait=False: confirm in the background and forget the worker then (a worker that said `done` has exited or
        is exiting: its grading thread need not wait for the report).
        """
        with self.cond:
            if self.replies.get(ident, {}).get("status") is not None:
                if not wait:
                    self.replies.pop(ident, None)
                return
        try:
            self._request({"op": "kill", "id": ident})
        except SandboxFailed:
            self.close()
            return
        if wait:
            self._confirm(ident)
        else:
            threading.Thread(target=self._confirm, args=(ident, True), name="sandbox-kill", daemon=True).start()

    def _confirm(self, ident: int, forget: bool = False) -> None:
        if self.status(ident, KILL_TIMEOUT) is None and not self.dead:
            self.close()  # a stopped or stuck fork server: every process of this sandbox goes with it
        if forget:
            self.forget(ident)

    def forget(self, ident: int) -> None:
        with self.cond:
            self.replies.pop(ident, None)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and not self.dead

    def close(self) -> None:
        """Kill the sandbox (bubblewrap's init takes every process inside with it) and remove the staged code."""
        with self.cond:
            self.dead = self.dead or "the sandbox was closed"
            self.cond.notify_all()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.control is not None:
            with contextlib.suppress(OSError):
                self.control.shutdown(socket.SHUT_RDWR)
            self.control.close()
        shutil.rmtree(self.staged, ignore_errors=True)


class Worker:
    """One notebook's worker inside the sandbox: its channel, and how to kill it from outside."""

    def __init__(self, box: Sandbox, ident: int, conn: Connection) -> None:
        self.box, self.ident, self.conn = box, ident, conn

    def exitcode(self, timeout: float = 0.0) -> int | None:
        """Like multiprocessing's: the exit status, negative for a signal, None while running."""
        return self.box.status(self.ident, timeout)

    def kill(self) -> None:
        """SIGKILL the worker's PID namespace: the worker and every process it started."""
        self.box.kill(self.ident)

    def close(self) -> None:
        self.conn.close()
        self.box.kill(self.ident, wait=False)


class Pool:
    """The batch's sandbox, restarted when it stops answering (the workers of the old one are killed with it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.box: Sandbox | None = None
        self.boxes: list[Sandbox] = []

    def warm(self) -> None:
        """Start the sandbox now, in the background (call from the main thread: bubblewrap dies with its parent thread)."""
        with self.lock:
            if self.box is None and unavailable_reason() is None:
                self.box = Sandbox().spawn()
                self.boxes.append(self.box)

    def current(self) -> Sandbox:
        """The running sandbox, started (or restarted after it stopped) and preloaded."""
        with self.lock:
            if self.box is not None and not self.box.ready and not self.box.dead:
                self.box.start()
            if self.box is None or not self.box.alive:
                self.box = Sandbox()
                self.boxes.append(self.box)
                self.box.start()
            return self.box

    def launch(self, start: dict[str, Any]) -> Worker:
        """A worker in the current sandbox; a stuck sandbox is replaced once, then SandboxFailed."""
        box = self.current()
        try:
            return box.launch(start)
        except SandboxFailed:
            box.close()
            return self.current().launch(start)

    def close(self) -> None:
        with self.lock:
            for box in self.boxes:
                box.close()
            self.boxes.clear()
            self.box = None


class Unsandboxed:
    """--unsafe-no-sandbox: the worker as a plain forked process of the grader's user, in a temporary directory."""

    def __init__(self, start: dict[str, Any]) -> None:
        from .worker import forkserver_context

        ctx = forkserver_context()
        self.workdir = tempfile.mkdtemp(prefix="autograder-")
        for rel, data in start["files"].items():
            target = Path(self.workdir, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=run_worker, args=(child, start["plan"], self.workdir), daemon=True)
        self.proc.start()
        child.close()

    def exitcode(self, timeout: float = 0.0) -> int | None:
        """The exit status, negative for a signal, None while running."""
        self.proc.join(timeout)
        return self.proc.exitcode

    def kill(self) -> None:
        """SIGKILL the worker's process group (a child that called setsid survives: that is what the sandbox is for)."""
        if self.proc.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)

    def close(self) -> None:
        self.kill()
        self.conn.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def run_worker(conn: Connection, plan: dict[str, Any], workdir: str) -> None:
    """The worker's entry point, in or out of the sandbox."""
    from autograder.grading.worker import child_main

    child_main(conn, plan, workdir)


MAX_FILES_BYTES = 50 * 2**20


def submission_files(folder: Path | None, limit: int = MAX_FILES_BYTES) -> dict[str, str]:
    """The submission's other files (data the notebook reads), never its notebooks or symlinks, within a size budget,
    as base64 text: they reach the worker as data over its channel, never through a shared folder."""
    files: dict[str, str] = {}
    if folder is None:
        return files
    budget = limit
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.suffix == ".ipynb":
            continue
        size = path.stat().st_size
        if size > budget:
            continue
        budget -= size
        files[path.relative_to(folder).as_posix()] = base64.b64encode(path.read_bytes()).decode("ascii")
    return files


class Mode:
    """How this grader runs workers: in the sandbox (the default) or, when asked, unsandboxed."""

    def __init__(self) -> None:
        self.unsafe = False
        self.pool = Pool()

    def launch(self, plan: dict[str, Any], files: dict[str, str]) -> Worker | Unsandboxed:
        """A worker for one notebook's plan; SandboxFailed (a reason for that notebook) or Unavailable (for the batch)."""
        start = {"plan": plan, "files": files}
        return Unsandboxed(start) if self.unsafe else self.pool.launch(start)

    @contextlib.contextmanager
    def using(self, unsafe: bool) -> Any:
        """Grade a batch in the sandbox unless `unsafe`; close it at the end. A sandbox `warm` started is waited for
        by `ready`; one not started yet is started here (Unavailable: refuse at once)."""
        self.unsafe = unsafe
        try:
            if not unsafe and self.pool.box is None:
                self.pool.current()
            yield self
        finally:
            self.pool.close()

    def ready(self) -> None:
        """Wait until the sandbox has preloaded (Unavailable: it cannot start here, and the batch is refused)."""
        if not self.unsafe:
            self.pool.current()


MODE = Mode()  # the grader's one sandbox pool; batch.run chooses the mode, runner.Session launches through it


# ------------------------------------------------------------------ sandbox side: the fork server

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x8000000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4


def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def enter_namespaces(libc: Any) -> None:
    """New user, mount, PID (for children), network and IPC namespaces; a private tmpfs scratch, /tmp and /dev/shm; /proc hidden."""
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    for path, options in ((SCRATCH, f"size={SCRATCH_BYTES},mode=0755"), ("/tmp", "size=64m,mode=1777"),
                          ("/dev/shm", "size=64m,mode=1777"), ("/proc", "size=4k,mode=0555")):
        if os.path.isdir(path):  # /proc last: the maps above were written through it
            _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode()), f"mount {path}")


def drop_privileges(libc: Any) -> None:
    """No capability left, none to regain (empty bounding set, no_new_privs); RLIMIT_NPROC as a best effort."""
    import resource

    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2: all zero
    _check(libc.capset(header, data), "capset")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    resource.setrlimit(resource.RLIMIT_NPROC, (NPROC, NPROC))


def _close_fds(*keep: int) -> None:
    """Close every descriptor above stderr except `keep`: a worker holds nothing of the server or other workers."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)


def _exit_status(status: int) -> int:
    """waitpid's status as multiprocessing reports it: the exit code, or minus the signal."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _learner(channel_fd: int, parent_alive: int, libc: Any) -> None:
    """The learner's process, PID 1 of the notebook's namespace: when it ends, for any reason, the kernel ends every
    process the notebook started. No privileges, only its channel open; read the start message, run the notebook."""
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the server killed our parent: the namespace goes
        if select.select([parent_alive], [], [], 0)[0]:
            os._exit(1)  # the parent died before PDEATHSIG was set
        drop_privileges(libc)
        _close_fds(channel_fd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        conn = Connection(channel_fd)
        start = json.loads(conn.recv_bytes())
        for rel, data in start.get("files", {}).items():
            target = Path(SCRATCH, rel)
            if ".." in Path(rel).parts or Path(rel).is_absolute():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
        run_worker(conn, start["plan"], SCRATCH)
    except BaseException:
        import traceback

        traceback.print_exc()  # the grader's own code failed before any learner code ran
        os._exit(70)
    os._exit(0)


def _spawn(channel_fd: int) -> tuple[int, int]:
    """Fork the process that builds the notebook's namespaces and reports how its learner's process ended;
    (its pid, the fd that status comes back on)."""
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(report_w)
        os.close(channel_fd)
        return pid, report_r
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _close_fds(channel_fd, report_w)
        libc = _libc()
        enter_namespaces(libc)
        alive_r, alive_w = os.pipe()
        learner = os.fork()  # PID 1 of the new PID namespace
        if learner == 0:
            os.close(alive_w)
            os.close(report_w)
            _learner(channel_fd, alive_r, libc)
        os.close(channel_fd)
        os.close(alive_r)
        _, status = os.waitpid(learner, 0)
        os.write(report_w, json.dumps(_exit_status(status)).encode())
    except BaseException:
        os._exit(1)
    os._exit(0)


def _self_test() -> str:
    """Why namespaces cannot be entered here, or ""."""
    pid = os.fork()
    if pid == 0:
        try:
            enter_namespaces(_libc())
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status == 0:
        return ""
    try:
        enter_namespaces(_libc())  # in this process only to read the error; the server never forks workers then
    except OSError as exc:
        return f"a worker cannot enter its own namespaces inside bubblewrap: {exc.strerror}"
    return "a worker cannot enter its own namespaces inside bubblewrap"


def serve(control_fd: int) -> None:
    """The fork server: preload, say ready, then spawn and kill workers as the grader asks, reporting their exits."""
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    staged_fonts = Path(INSIDE, "matplotlib")
    if staged_fonts.is_dir():
        shutil.copytree(staged_fonts, ENVIRONMENT["MPLCONFIGDIR"], dirs_exist_ok=True)
    t0 = time.perf_counter()
    error = _self_test()
    t1 = time.perf_counter()
    if not error:
        try:
            for name in PRELOAD:
                importlib.import_module(name)
            import gc
            import threading as _threading

            import tqdm

            from autograder.grading import worker

            tqdm.tqdm.set_lock(_threading.RLock())  # not a multiprocessing semaphore that a killed worker would leak
            worker.prepare()
            # Everything loaded so far lives as long as the server: out of the collector's sight, a worker's garbage
            # collections neither walk it nor copy its pages (fork's copy-on-write).
            gc.freeze()
        except Exception as exc:
            error = f"the worker-side code failed to import: {type(exc).__name__}: {exc}"
    timing = {"self_test_s": round(t1 - t0, 4), "preload_s": round(time.perf_counter() - t1, 4)}
    control.send(json.dumps({"op": "ready", "ok": not error, "error": error, **timing}).encode())
    if error:
        return
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    workers: dict[int, tuple[int, int]] = {}  # id -> (pid of the namespace builder, status fd)
    while True:
        readable = select.select([control, wake_r], [], [])[0]
        if wake_r in readable:
            os.read(wake_r, 4096)
        if control in readable:
            try:
                data, fds, _, _ = socket.recv_fds(control, 4096, 1)
            except OSError:
                data, fds = b"", []
            if not data:
                return  # the grader is gone: bubblewrap's init ends every worker
            msg = json.loads(data)
            if msg.get("op") == "spawn" and fds:
                workers[msg["id"]] = _spawn(fds[0])
                control.send(json.dumps({"op": "spawned", "id": msg["id"]}).encode())
            elif msg.get("op") == "kill" and msg.get("id") in workers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(workers[msg["id"]][0], signal.SIGKILL)  # PDEATHSIG takes the namespace's init, and so all
            for fd in fds[1:]:
                os.close(fd)
        for ident, (pid, report) in list(workers.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done:
                continue
            try:
                code = json.loads(os.read(report, 64) or b"null")
            except ValueError:
                code = None
            os.close(report)
            if code is None:
                code = -signal.SIGKILL if os.WIFSIGNALED(status) else 1
            del workers[ident]
            control.send(json.dumps({"op": "exited", "id": ident, "status": code}).encode())
