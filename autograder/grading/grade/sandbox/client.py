"""The grader's side of the sandbox: one bubblewrap sandbox per batch (`Sandbox`), a `Worker` per notebook in it,
the `Pool` that replaces a sandbox that stopped answering, the unsandboxed mode, and `MODE`, which batch grading
launches every worker through.

Every wait here has a deadline: a spawn, a kill's confirmation, a request on the control socket, a channel frame.
A slow or failed start costs only its own notebook: the sandbox is replaced only when it stops answering a ping.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ....settings import (
    CONTROL_TIMEOUT,
    EXIT_TIMEOUT,
    KILL_TIMEOUT,
    OTHER_FILES_BYTES,
    PING_TIMEOUT,
    SANDBOX_START_TIMEOUT,
    SPAWN_TIMEOUT,
    START_SEND_TIMEOUT,
    Limits,
)
from .bwrap import bwrap_argv, unavailable_reason
from .cgroup import Cgroups, NotebookCgroups
from .frames import Channel
from .linux import die_with_parent

UNSANDBOXED = "UNSANDBOXED: graded with --unsafe-no-sandbox, learner code ran as the grader's user"
STAGING_PREFIX = "autograder-sandbox-"  # + the grader's pid: a staging whose grader is gone can be removed


class Unavailable(Exception):
    """No sandbox can start on this machine; the message says why and how to enable it, in one line."""


class SandboxFailed(Exception):
    """The sandbox could not start this notebook's worker, or stopped answering; the message is the reason."""


class SpawnTimeout(SandboxFailed):
    """The fork server did not start a worker within SPAWN_TIMEOUT."""


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

    def __init__(self, cgroups: Cgroups | None = None) -> None:
        from .staging import stage

        self._stage = stage
        self.proc: subprocess.Popen[bytes] | None = None
        self.control: socket.socket | None = None
        remove_abandoned_stagings()
        self.staged = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-"))
        self.lock = threading.Lock()  # one request at a time on the control socket
        self.cond = threading.Condition()
        self.replies: dict[int, dict[str, Any]] = {}  # worker id -> {"spawned", "error", "status", "oom"}
        self.own_cgroups = cgroups is None  # a Pool's sandboxes share the batch's; a sandbox alone makes its own
        self.cgroups = Cgroups() if cgroups is None else cgroups
        self.notebook_cgroups: dict[int, NotebookCgroups] = {}
        self.ids = itertools.count(1)
        self.pongs = 0
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
        self._stage(self.staged)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(bwrap_argv(shutil.which("bwrap") or "bwrap", self.staged, theirs.fileno()),
                                     pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.errors, cwd="/")
        theirs.close()
        ours.settimeout(CONTROL_TIMEOUT)  # a send that cannot be written in time: the server is stuck
        self.control = ours
        threading.Thread(target=self._read, name="sandbox-control", daemon=True).start()
        return self

    def start(self) -> Sandbox:
        """Start (unless `spawn` did) and wait until the fork server has preloaded; Unavailable when it cannot start here."""
        if self.proc is None:
            self.spawn()
        with self.cond:
            self.cond.wait_for(lambda: self.ready or self.dead, SANDBOX_START_TIMEOUT)
        if not self.ready.get("ok"):
            self.errors.seek(0)
            said = self.errors.read().decode(errors="replace").strip().splitlines()
            detail = self.ready.get("error") or (said[-1] if said else self.dead or "no answer within the time limit")
            self.close()
            raise Unavailable(start_failure(detail))
        return self

    def _read(self) -> None:
        """Dispatch the fork server's replies: ready, spawned, exited, pong."""
        assert self.control is not None
        while True:
            try:
                data = self.control.recv(65536)
            except TimeoutError:
                if self.dead:
                    break
                continue
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
                    self.ready, self.started = msg, time.perf_counter() - self.t0  # (`start` may never wait for it)
                elif op == "pong":
                    self.pongs += 1
                elif op in ("spawned", "exited") and isinstance(msg.get("id"), int):
                    slot = self.replies.setdefault(msg["id"], {"spawned": False, "status": None})
                    slot["spawned"] = True
                    slot["error"] = slot.get("error") or str(msg.get("error") or "")
                    if op == "exited":
                        groups = self.notebook_cgroups.pop(msg["id"], None)
                        if groups is not None:  # its processes are gone: read what happened, then remove the folders
                            slot["oom"] = groups.out_of_memory()
                            groups.remove()
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
        except OSError as exc:  # (TimeoutError included: the server does not read its control socket)
            raise SandboxFailed(f"the sandbox stopped answering ({exc.strerror or exc})") from None

    def ping(self, timeout: float = PING_TIMEOUT) -> bool:
        """True when the fork server answers within `timeout` s (it is slow, not stuck)."""
        with self.cond:
            seen = self.pongs
        try:
            self._request({"op": "ping"})
        except SandboxFailed:
            return False
        with self.cond:
            return self.cond.wait_for(lambda: self.pongs > seen or self.dead, timeout) and not self.dead

    def launch(self, start: dict[str, Any]) -> Worker:
        """A new worker running `start` (the plan and the submission's files); SandboxFailed (SpawnTimeout) if not."""
        ident = next(self.ids)
        groups = None
        if self.cgroups.available:
            memory_mb = int(start.get("plan", {}).get("limits", {}).get("memory_mb", Limits.memory_mb.default_value))
            try:
                groups = self.cgroups.make(f"nb-{os.getpid()}-{id(self)}-{ident}", memory_mb)
            except OSError as exc:
                raise SandboxFailed(f"cannot make the notebook's cgroups ({exc.strerror})") from None
            with self.cond:
                self.notebook_cgroups[ident] = groups
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._request({"op": "spawn", "id": ident}, [theirs.fileno(), *(groups.fds if groups else [])])
        except SandboxFailed:
            ours.close()
            self.forget(ident)
            raise
        finally:
            theirs.close()
            if groups is not None:
                groups.close_fds()
        with self.cond:
            ok = self.cond.wait_for(lambda: self.replies.get(ident, {}).get("spawned") or self.dead, SPAWN_TIMEOUT)
            error = self.replies.get(ident, {}).get("error", "")
        if not ok or self.dead or error:
            ours.close()
            if self.dead:
                raise SandboxFailed(self.dead)
            if error:
                raise SandboxFailed(error)
            self.kill(ident, wait=False)  # should it start after all, it goes at once
            raise SpawnTimeout(f"the sandbox did not start a worker within {SPAWN_TIMEOUT:g} s")
        channel = Channel(ours.detach())
        worker = Worker(self, ident, channel)
        try:
            channel.send(json.dumps(start).encode(), time.monotonic() + START_SEND_TIMEOUT)
        except OSError:
            pass  # the worker already died, or does not read: the grader reads why from its first recv
        return worker

    def status(self, ident: int, timeout: float) -> int | None:
        """The worker's exit status (negative: killed by that signal), or None while it runs."""
        with self.cond:
            self.cond.wait_for(lambda: self.replies.get(ident, {}).get("status") is not None or self.dead, timeout)
            return self.replies.get(ident, {}).get("status")

    def out_of_memory(self, ident: int) -> bool:
        """True when the worker's memory cgroup killed it for passing its limit."""
        with self.cond:
            return bool(self.replies.get(ident, {}).get("oom"))

    def kill(self, ident: int, wait: bool = True) -> None:
        """Kill one worker and everything it started; if the server neither confirms nor answers, kill the sandbox.

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
        if self.status(ident, KILL_TIMEOUT) is None and not self.dead and not self.ping():
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
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(KILL_TIMEOUT)
        if self.control is not None:
            with contextlib.suppress(OSError):
                self.control.shutdown(socket.SHUT_RDWR)
            self.control.close()
        with self.cond:
            for groups in self.notebook_cgroups.values():
                groups.remove()  # (a folder whose processes are still dying stays until the batch's end)
            self.notebook_cgroups.clear()
        if self.own_cgroups:
            self.cgroups.close()
        shutil.rmtree(self.staged, ignore_errors=True)


class Worker:
    """One notebook's worker inside the sandbox: its channel, and how to kill it from outside."""

    def __init__(self, box: Sandbox, ident: int, channel: Channel) -> None:
        self.box, self.ident, self.channel = box, ident, channel

    def exitcode(self, timeout: float = 0.0) -> int | None:
        """Like multiprocessing's: the exit status, negative for a signal, None while running."""
        return self.box.status(self.ident, timeout)

    def out_of_memory(self) -> bool:
        """True when the notebook's memory cgroup killed it (known once it has exited)."""
        return self.box.out_of_memory(self.ident)

    def kill(self) -> None:
        """SIGKILL the worker's PID 1: the kernel ends its whole PID namespace, every process it started."""
        self.box.kill(self.ident)

    def close(self) -> None:
        self.channel.close()
        self.box.kill(self.ident, wait=False)


class Pool:
    """The batch's sandbox, replaced when it stops answering (the workers of the old one are killed with it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.box: Sandbox | None = None
        self.boxes: list[Sandbox] = []
        self.cgroups: Cgroups | None = None
        self.mode = ""  # which bounds are in force (cgroup.ROOT_MODE or UNPRIVILEGED_MODE), once a sandbox was made

    def _new(self) -> Sandbox:
        if self.cgroups is None:
            self.cgroups = Cgroups()
        self.mode = self.cgroups.mode
        box = Sandbox(self.cgroups)
        self.boxes.append(box)
        return box

    def warm(self) -> None:
        """Start the sandbox now, in the background (call from the main thread: bubblewrap dies with its parent thread)."""
        with self.lock:
            if self.box is None and unavailable_reason() is None:
                self.box = self._new().spawn()

    def current(self) -> Sandbox:
        """The running sandbox, started (or restarted after it stopped) and preloaded."""
        with self.lock:
            if self.box is not None and not self.box.ready and not self.box.dead:
                self.box.start()
            if self.box is None or not self.box.alive:
                self.box = self._new()
                self.box.start()
            return self.box

    def launch(self, start: dict[str, Any]) -> Worker:
        """A worker in the current sandbox. A slow start is retried once in the same sandbox (the others' workers
        keep running); only a sandbox that no longer answers a ping is replaced. SandboxFailed: this notebook only."""
        box = self.current()
        try:
            return box.launch(start)
        except SpawnTimeout:
            if box.ping():
                return box.launch(start)
            box.close()
        except SandboxFailed:
            if box.alive:
                raise
        return self.current().launch(start)

    def close(self) -> None:
        with self.lock:
            for box in self.boxes:
                box.close()
            self.boxes.clear()
            self.box = None
            if self.cgroups is not None:
                self.cgroups.close()
                self.cgroups = None


UNSANDBOXED_PRELOAD = [f"{__package__}.warm"]  # the unsandboxed fork server's preload: importing it loads the rest
_CONTEXT: Any = None


def forkserver_context(start: bool = False) -> Any:
    """The unsandboxed mode's forkserver context (one warm process forks every worker); `start` launches the server
    now, in the background."""
    global _CONTEXT
    if _CONTEXT is None:
        import multiprocessing

        # Inherited by the fork server: one BLAS thread per worker (and a small address space), inline figures.
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(UNSANDBOXED_PRELOAD)
        _CONTEXT = ctx
    if start:
        from multiprocessing import forkserver

        forkserver.ensure_running()  # returns at once; the server imports its preload while the grader imports nbgrader
    return _CONTEXT


class Unsandboxed:
    """--unsafe-no-sandbox: the worker as a plain forked process of the grader's user, in a temporary directory."""

    def __init__(self, start: dict[str, Any]) -> None:
        ctx = forkserver_context()
        self.workdir = tempfile.mkdtemp(prefix="autograder-")
        for rel, data in start["files"].items():
            target = Path(self.workdir, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
        conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=run_worker, args=(child, start["plan"], self.workdir), daemon=True)
        self.proc.start()
        child.close()
        self.channel = Channel(os.dup(conn.fileno()))
        conn.close()

    def exitcode(self, timeout: float = 0.0) -> int | None:
        """The exit status, negative for a signal, None while running."""
        self.proc.join(timeout)
        return self.proc.exitcode

    def out_of_memory(self) -> bool:
        return False

    def kill(self) -> None:
        """SIGKILL the worker's process group (a child that called setsid survives: that is what the sandbox is for)."""
        if self.proc.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(EXIT_TIMEOUT)

    def close(self) -> None:
        self.kill()
        self.channel.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def run_worker(conn: Connection, plan: dict[str, Any], workdir: str) -> None:
    """The unsandboxed worker's entry point."""
    from autograder.grading.grade.worker.main import child_main

    die_with_parent()
    child_main(conn, plan, workdir)


def submission_files(folder: Path | None, limit: int = OTHER_FILES_BYTES) -> dict[str, str]:
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

    def describe(self) -> str:
        """One line for the batch's summary: which sandbox, and which bounds are in force."""
        if self.unsafe:
            return "sandbox: none (--unsafe-no-sandbox)"
        return f"sandbox: bubblewrap, {self.pool.mode or 'not started'}"

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
