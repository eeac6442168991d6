"""The sandbox side: the fork server that bubblewrap starts, and the two processes it forks for each notebook.

`serve` preloads numpy, matplotlib, IPython and the worker once, says ready, then per notebook forks a *builder*
that enters new user, mount, PID, network and IPC namespaces and mounts the notebook's own writable filesystems
(a size-bounded tmpfs scratch, /tmp and /dev/shm, a read-only /dev holding only the device nodes Python needs,
/proc hidden), then forks the *learner's process*: PID 1 of the new PID namespace, in the notebook's cgroups (when
the grader made them), with no capability, a seccomp filter and resource limits. The server holds a pidfd of
that process and kills the notebook through it; when PID 1 dies, for any reason, the kernel kills every process of
the namespace before PID 1's death is reported, whatever they did to their death signals or sessions. Standard
library only: this runs inside the sandbox.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from . import linux
from .inside import DEVICES, ENVIRONMENT, INSIDE, PRELOAD, SCRATCH

BUILD_FAILED = 70  # exit status of a builder or learner whose setup failed before any learner code ran




@dataclass(frozen=True)
class Bounds:
    """What the fork server bounds, handed to `serve` by the grader (`bwrap.fork_server_bounds`: settings.py's values;
    this module imports only the standard library)."""

    mounts: dict[str, list[int]] = field(default_factory=dict)  # a notebook's writable mount -> [bytes, inodes]
    empty_tmpfs: list[int] = field(default_factory=list)  # [bytes, inodes] of its read-only /dev (and of its builder)
    proc_tmpfs: list[int] = field(default_factory=list)  # [bytes, inodes] of the empty tmpfs over its /proc
    nofile: int = 0  # its open files
    nproc: int = 0  # its processes
    setup_timeout: float = 0.0  # seconds its PID 1's setup may take (a clone's, or a builder's hand-over)
    exit_timeout: float = 0.0  # seconds its PID 1 may take to be gone once killed


# ------------------------------------------------------------------ one notebook's namespaces and mounts


def _tmpfs(lib: Any, path: str, size: int, inodes: int, mode: str = "1777") -> None:
    linux.mount(lib, "tmpfs", path, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, f"size={size},nr_inodes={inodes},mode={mode}")


def _private_dev(lib: Any, bounds: Bounds) -> None:
    """A new /dev of its own: the device nodes Python needs (bound from the sandbox's /dev), /dev/shm, read-only."""
    old = SCRATCH + "/dev"  # the sandbox's /dev, reachable for a moment below a throw-away tmpfs
    _tmpfs(lib, SCRATCH, *bounds.empty_tmpfs, "0700")
    os.mkdir(old)
    linux.mount(lib, "/dev", old, None, linux.MS_BIND | linux.MS_REC)
    _tmpfs(lib, "/dev", *bounds.empty_tmpfs, "0755")
    for name in DEVICES:
        if os.path.exists(f"{old}/{name}"):
            open(f"/dev/{name}", "w").close()
            linux.mount(lib, f"{old}/{name}", f"/dev/{name}", None, linux.MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{name}")
    os.mkdir("/dev/shm")
    size, inodes = bounds.mounts["/dev/shm"]
    _tmpfs(lib, "/dev/shm", size, inodes)
    linux.mount(lib, "none", "/dev", None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NOEXEC)
    linux.check(lib.umount2(old.encode(), linux.MNT_DETACH), f"umount {old}")
    linux.check(lib.umount2(SCRATCH.encode(), linux.MNT_DETACH), f"umount {SCRATCH}")


NAMESPACES = linux.CLONE_NEWUSER | linux.CLONE_NEWNS | linux.CLONE_NEWPID | linux.CLONE_NEWNET | linux.CLONE_NEWIPC


def enter_namespaces(lib: Any, bounds: Bounds) -> None:
    """New user, mount, PID (for children), network and IPC namespaces; the notebook's own mounts; /proc hidden."""
    uid, gid = os.getuid(), os.getgid()
    linux.check(lib.unshare(NAMESPACES), "unshare")
    set_up_namespaces(lib, uid, gid, bounds)


def set_up_namespaces(lib: Any, uid: int, gid: int, bounds: Bounds) -> None:
    """In a process just put in new namespaces (by unshare or clone): its ids mapped to those it had (`uid`, `gid`),
    the notebook's own mounts (within `bounds`), /proc hidden."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    linux.mount(lib, "none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
    _private_dev(lib, bounds)
    for path in (SCRATCH, "/tmp"):
        size, inodes = bounds.mounts[path]
        _tmpfs(lib, path, size, inodes, "0755" if path == SCRATCH else "1777")
    _tmpfs(lib, "/proc", *bounds.proc_tmpfs, "0555")  # last: the maps above were written through it


def drop_privileges(lib: Any, bounds: Bounds) -> None:
    """No capability left, none to regain (empty bounding set, no_new_privs); file and process limits."""
    import resource

    for cap in range(64):
        if lib.prctl(linux.PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    lib.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(linux.LINUX_CAPABILITY_VERSION_3, 0)  # this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2: all zero
    linux.check(lib.capset(header, data), "capset")
    linux.check(lib.prctl(linux.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    resource.setrlimit(resource.RLIMIT_NPROC, (bounds.nproc, bounds.nproc))
    resource.setrlimit(resource.RLIMIT_NOFILE, (bounds.nofile, bounds.nofile))


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


# ------------------------------------------------------------------ the learner's process and its builder

PROGRAMS: dict[bool, bytes] = {}  # the seccomp filters, compiled once by `serve`: {may start processes: program}


def _learner(channel_fd: int, cgroup_fds: list[int], go: int | None, lib: Any, bounds: Bounds) -> None:
    """PID 1 of the notebook's namespace: join the notebook's cgroups, wait until the server holds our pidfd (when a
    builder made us: `go`; a clone gave the server its pidfd already), drop every privilege, load the seccomp filter,
    read the start message, run the notebook. Nothing of the learner's runs before all of that."""
    try:
        lib.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # our parent (builder or server) killed: we go too
        for fd in cgroup_fds:
            os.write(fd, b"0")  # this process, and so everything it starts, counted by the notebook's cgroup
            os.close(fd)
        if go is not None:
            if os.read(go, 1) != b"g":
                os._exit(BUILD_FAILED)  # the builder died before the server could hold this process
            os.close(go)
        drop_privileges(lib, bounds)
        linux.install_filter(lib, PROGRAMS[bool(cgroup_fds)])  # no cgroup counts them together: no new process
        _close_fds(channel_fd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        conn = Connection(channel_fd)
        start = json.loads(conn.recv_bytes())
        for rel, data in start.get("files", {}).items():
            if ".." in Path(rel).parts or Path(rel).is_absolute():
                continue
            target = Path(SCRATCH, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
        from autograder.grading.grade.worker.main import child_main

        child_main(conn, start["plan"], SCRATCH)
    except BaseException:
        import traceback

        traceback.print_exc()  # the grader's own code failed before any learner code ran
        os._exit(BUILD_FAILED)
    os._exit(0)


def _build(channel_fd: int, cgroup_fds: list[int], report: socket.socket, bounds: Bounds) -> None:
    """The builder: the notebook's namespaces, then its learner's process; hands the server that process's pidfd,
    lets it run, and reports how it ended (once its whole PID namespace is gone)."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _close_fds(channel_fd, report.fileno(), *cgroup_fds)
        # A session of its own, which its learner's process inherits: where the scheduler groups processes by session
        # (autogroup, in the unprivileged mode), the notebook's threads weigh as one classmate, not one each
        os.setsid()
        lib = linux.libc()
        enter_namespaces(lib, bounds)
        go_r, go_w = os.pipe()
        learner = os.fork()
        if learner == 0:
            os.close(go_w)
            report.close()
            _learner(channel_fd, cgroup_fds, go_r, lib, bounds)
        for fd in (channel_fd, go_r, *cgroup_fds):
            os.close(fd)
        pidfd = os.pidfd_open(learner)
        socket.send_fds(report, [b"started"], [pidfd])
        os.close(pidfd)
        os.write(go_w, b"g")
        os.close(go_w)
        _, status = os.waitpid(learner, 0)  # returns once PID 1 and every process of its namespace are gone
        report.send(json.dumps(_exit_status(status)).encode())
    except BaseException:
        os._exit(BUILD_FAILED)
    os._exit(0)


@dataclass
class Notebook:
    """The server's handle on one notebook: the pid it waits for (its builder's, or its PID 1's when a clone made PID
    1 the server's own child: `direct`), the report socket, the learner's pidfd."""

    builder: int
    report: socket.socket
    pidfd: int = -1
    direct: bool = False

    def kill(self) -> None:
        """SIGKILL the notebook's PID 1 (the kernel then kills its whole namespace); its builder if PID 1 is not known."""
        with contextlib.suppress(ProcessLookupError, OSError):
            if self.pidfd >= 0:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.builder, signal.SIGKILL)

    def gone(self, timeout: float) -> bool:
        """True once the notebook's PID 1 has ended (its pidfd turns readable then)."""
        return self.pidfd < 0 or linux.wait_fd(self.pidfd, timeout)

    def close(self) -> None:
        if self.pidfd >= 0:
            os.close(self.pidfd)
        self.report.close()


CLONE: linux.Clone | None = None  # set by `serve` when one clone can make a notebook's PID 1 here (`_self_test`)


def spawn(channel_fd: int, cgroup_fds: list[int], bounds: Bounds) -> tuple[Notebook, str]:
    """Start one notebook's PID 1, and hold its pidfd: (handle, error or "")."""
    if CLONE is not None:
        return _spawn_cloned(CLONE, channel_fd, cgroup_fds, bounds)
    return _spawn_built(channel_fd, cgroup_fds, bounds)


def _spawn_cloned(clone: linux.Clone, channel_fd: int, cgroup_fds: list[int], bounds: Bounds) -> tuple[Notebook, str]:
    """One clone into the notebook's namespaces: its PID 1, the server's own child (pidfd held from the clone on),
    sets up its mounts and becomes the learner's process; the server waits until it says its setup is done. One
    fork and one exit fewer than a builder that forks the learner, and fewer pages copied (~25% of an empty
    worker's CPU)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    uid, gid = os.getuid(), os.getgid()
    pid, pidfd = clone(NAMESPACES)
    if pid == 0:
        try:
            ours.close()
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _close_fds(channel_fd, theirs.fileno(), *cgroup_fds)
            os.setsid()  # (see _build)
            lib = linux.libc()
            set_up_namespaces(lib, uid, gid, bounds)
            theirs.send(b"ready")
            theirs.close()
        except BaseException:
            os._exit(BUILD_FAILED)
        _learner(channel_fd, cgroup_fds, None, lib, bounds)
    theirs.close()
    for fd in (channel_fd, *cgroup_fds):
        os.close(fd)
    notebook = Notebook(pid, ours, pidfd, direct=True)
    ready = False
    if linux.wait_fd(ours.fileno(), bounds.setup_timeout):
        with contextlib.suppress(OSError):
            ready = ours.recv(16) == b"ready"
    if not ready:
        notebook.kill()
        return notebook, "the notebook's namespaces could not be set up"
    return notebook, ""


def _spawn_built(channel_fd: int, cgroup_fds: list[int], bounds: Bounds) -> tuple[Notebook, str]:
    """Fork the builder of one notebook and wait until it hands over the learner's pidfd; (handle, error or "")."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        ours.close()
        _build(channel_fd, cgroup_fds, theirs, bounds)
    theirs.close()
    for fd in (channel_fd, *cgroup_fds):
        os.close(fd)
    notebook = Notebook(pid, ours)
    if linux.wait_fd(ours.fileno(), bounds.setup_timeout):
        with contextlib.suppress(OSError):
            _, fds, _, _ = socket.recv_fds(ours, 64, 1)
            notebook.pidfd = fds[0] if fds else -1
    if notebook.pidfd < 0:
        notebook.kill()
        return notebook, "the notebook's namespaces could not be set up"
    return notebook, ""


def _clone_works(clone: linux.Clone, bounds: Bounds) -> bool:
    """Whether a clone makes a notebook's PID 1 here: its namespaces and mounts, its seccomp filter, and the C
    library's thread id set by the kernel where `Clone` said (else glibc would keep the server's)."""
    uid, gid = os.getuid(), os.getgid()
    try:
        pid, pidfd = clone(NAMESPACES)
    except OSError:
        return False
    if pid == 0:
        try:
            lib = linux.libc()
            set_up_namespaces(lib, uid, gid, bounds)
            if not os.getpid() == linux.glibc_tid() == 1:
                os._exit(1)
            linux.check(lib.prctl(linux.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
            linux.install_filter(lib, linux.filter_program(False))
        except BaseException:
            os._exit(1)
        os._exit(0)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    return status == 0


def _self_test(bounds: Bounds) -> str:
    """Why a notebook's namespaces, mounts or seccomp filter cannot be set up here, or "". Sets CLONE when one clone
    makes a notebook's PID 1 (else each notebook has a builder that unshares and forks)."""
    global CLONE
    clone = linux.Clone.make()
    if clone is not None and _clone_works(clone, bounds):
        CLONE = clone
        return ""
    pid = os.fork()
    if pid == 0:
        try:
            lib = linux.libc()
            enter_namespaces(lib, bounds)
            os.pidfd_open(os.getpid())
            linux.check(lib.prctl(linux.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
            linux.install_filter(lib, linux.filter_program(False))
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status == 0:
        return ""
    try:
        enter_namespaces(linux.libc(), bounds)  # in this process only to read the error; the server never forks workers then
    except OSError as exc:
        return f"a worker cannot enter its own namespaces inside bubblewrap: {exc.strerror}"
    return "a worker cannot set up its own namespaces inside bubblewrap"


def serve(control_fd: int, bounds: dict[str, Any]) -> None:
    """The fork server: preload, say ready, then spawn and kill notebooks as the grader asks, reporting their exits;
    every notebook within `bounds` (`Bounds`' fields, as `bwrap.fork_server_bounds` gives them)."""
    kept = Bounds(**bounds)
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    staged_fonts = Path(INSIDE, "matplotlib")
    if staged_fonts.is_dir():
        shutil.copytree(staged_fonts, ENVIRONMENT["MPLCONFIGDIR"], dirs_exist_ok=True)
    t0 = time.perf_counter()
    error = _self_test(kept)
    try:
        PROGRAMS.update({processes: linux.filter_program(processes) for processes in (True, False)})
    except ValueError as exc:
        error = error or f"no seccomp filter for this machine ({exc})"
    t1 = time.perf_counter()
    if not error:
        try:
            from autograder.grading.grade.worker.preload import load

            load(PRELOAD, prepare_worker=True)
        except Exception as exc:
            error = f"the worker-side code failed to import: {type(exc).__name__}: {exc}"
    timing = {"self_test_s": round(t1 - t0, 4), "preload_s": round(time.perf_counter() - t1, 4),
              "one_clone": CLONE is not None}  # (how each notebook's PID 1 is made: one clone, or a builder)
    control.send(json.dumps({"op": "ready", "ok": not error, "error": error, **timing}).encode())
    if error:
        return
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    notebooks: dict[int, Notebook] = {}
    poller = select.poll()  # (not select(2): it refuses descriptors past FD_SETSIZE)
    for fd in (control_fd, wake_r):
        poller.register(fd, linux.READY[False])
    while True:
        readable = {fd for fd, _ in poller.poll()}  # idle until the grader asks or a builder exits
        if wake_r in readable:
            os.read(wake_r, 4096)
        if control_fd in readable:
            try:
                data, fds, _, _ = socket.recv_fds(control, 4096, 8)
            except OSError:
                data, fds = b"", []
            if not data:
                return  # the grader is gone: bubblewrap's init ends every worker
            try:
                msg = json.loads(data)
            except ValueError:
                msg = {}
            op, ident = msg.get("op"), msg.get("id")
            if op == "spawn" and fds and isinstance(ident, int):
                notebooks[ident], error = spawn(fds[0], fds[1:], kept)
                fds = []
                control.send(json.dumps({"op": "spawned", "id": ident, "error": error}).encode())
            elif op == "kill" and ident in notebooks:
                notebooks[ident].kill()
            elif op == "ping":
                control.send(json.dumps({"op": "pong"}).encode())
            for fd in fds:
                os.close(fd)
        for ident, notebook in list(notebooks.items()):
            done, status = os.waitpid(notebook.builder, os.WNOHANG)
            if not done:
                continue
            code = _exit_status(status) if notebook.direct else None  # PID 1 itself, its namespace gone with it
            if not notebook.direct:
                with contextlib.suppress(OSError, ValueError):
                    notebook.report.setblocking(False)
                    code = json.loads(notebook.report.recv(64) or b"null")
                if not notebook.gone(0):  # the builder died first (it never does on its own): end PID 1 ourselves
                    notebook.kill()
                    notebook.gone(kept.exit_timeout)
            if code is None:
                code = -signal.SIGKILL if os.WIFSIGNALED(status) else BUILD_FAILED
            notebook.close()
            del notebooks[ident]
            control.send(json.dumps({"op": "exited", "id": ident, "status": code}).encode())
