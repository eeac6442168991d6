"""The Linux interfaces the sandbox calls through ctypes, each number named once: namespaces, mounts, capabilities,
prctl, pidfds, waiting on a descriptor, and the seccomp filter that refuses what no limit of a notebook could count.

Standard library only: the fork server runs this inside the sandbox.
"""

from __future__ import annotations

import ctypes
import errno
import math
import os
import select
import struct
from typing import Any

# unshare(2) and clone(2) flags
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x8000000, 0x10000000, 0x20000000, 0x40000000
CLONE_PIDFD, CLONE_CHILD_SETTID = 0x1000, 0x01000000
# mount(2) and umount2(2) flags
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x2, 0x4, 0x8, 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2
# prctl(2) options
PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 22, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522

# seccomp(2) return values and the classic BPF instructions a filter is made of
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
SECCOMP_DATA_NR, SECCOMP_DATA_ARCH, SECCOMP_DATA_ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg 0: its low word)
CLONE_THREAD = 0x10000
X32_SYSCALL_BIT = 0x40000000

# What a notebook may not do in any mode, because no limit of it would count what it holds (or it is a way into the
# kernel no honest notebook needs): memfd and secret memory, System V shared memory and message queues, sockets
# (a notebook has no network; a socket's queued bytes are kernel memory), io_uring, userfaultfd, perf events, BPF
# and the kernel keyring. Refused with EPERM, as a missing permission would be.
DENIED = ("memfd_create", "memfd_secret", "shmget", "msgget", "socket", "socketpair", "io_uring_setup", "userfaultfd",
          "perf_event_open", "bpf", "add_key", "request_key", "keyctl")
# Without a cgroup nothing would count what several processes hold together (each has its own address space):
# in the unprivileged mode a notebook starts no process at all (threads it may).
NEW_PROCESS = ("fork", "vfork")
# Per architecture: the audit arch of struct seccomp_data, and the syscall numbers (asm/unistd.h).
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {"memfd_create": 319, "memfd_secret": 447, "shmget": 29, "msgget": 68, "socket": 41,
                            "socketpair": 53, "io_uring_setup": 425, "userfaultfd": 323, "perf_event_open": 298,
                            "bpf": 321, "add_key": 248, "request_key": 249, "keyctl": 250, "fork": 57, "vfork": 58,
                            "clone": 56, "clone3": 435}),
    "aarch64": (0xC00000B7, {"memfd_create": 279, "memfd_secret": 447, "shmget": 194, "msgget": 186, "socket": 198,
                             "socketpair": 199, "io_uring_setup": 425, "userfaultfd": 282, "perf_event_open": 241,
                             "bpf": 280, "add_key": 217, "request_key": 218, "keyctl": 219, "clone": 220,
                             "clone3": 435}),
}


# What makes each way ready: an error or a hang-up counts too (the read or write that follows says which).
READY = {False: select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR | select.POLLNVAL,
         True: select.POLLOUT | select.POLLHUP | select.POLLERR | select.POLLNVAL}


def wait_fd(fd: int, timeout: float, write: bool = False) -> bool:
    """True when `fd` (any number, past FD_SETSIZE too) is ready to read (or write) within `timeout` s; never blocks
    past it. Milliseconds rounded up: a wait of 0.4 ms is a wait, not a busy poll."""
    poller = select.poll()
    poller.register(fd, READY[write])
    return bool(poller.poll(max(0, math.ceil(timeout * 1000))))


def libc() -> Any:
    """The C library, with errno kept and mount's argument types declared."""
    lib = ctypes.CDLL(None, use_errno=True)
    lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    lib.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return lib


def check(result: int, what: str) -> None:
    """OSError with the C library's errno unless `result` is 0."""
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(lib: Any, source: str, target: str, fstype: str | None, flags: int, options: str | None = None) -> None:
    """mount(2), OSError on failure."""
    check(lib.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                    options.encode() if options else None), f"mount {target}")


def _assemble(program: list[tuple[Any, ...]]) -> bytes:
    """Classic BPF from (code, k, true label, false label) tuples and label strings; a jump's offset is the number of
    instructions it skips."""
    labels: dict[str, int] = {}
    body: list[tuple[int, Any, Any, int]] = []
    for item in program:
        if isinstance(item, str):
            labels[item] = len(body)
        else:
            code, k, yes, no = (*item, None, None)[:4]
            body.append((code, yes, no, k))
    out = []
    for at, (code, yes, no, k) in enumerate(body):
        jt, jf = ((labels[x] - at - 1) if x is not None else 0 for x in (yes, no))
        out.append(struct.pack("HBBI", code, jt, jf, k))
    return b"".join(out)


def filter_program(processes: bool = True, machine: str | None = None) -> bytes:
    """The seccomp filter: DENIED refused with EPERM, any other architecture's (and x32's) system calls refused too;
    with `processes` False also every new process (fork, vfork, a clone that is not a thread; clone3 says ENOSYS so
    that the C library makes threads with clone). ValueError on an architecture it has no numbers for."""
    machine = machine or os.uname().machine
    if machine not in ARCHES:
        raise ValueError(f"no seccomp syscall numbers for {machine}")
    arch, numbers = ARCHES[machine]
    denied = [numbers[name] for name in DENIED]
    if not processes:
        denied += [numbers[name] for name in NEW_PROCESS if name in numbers]
    program: list[tuple[Any, ...] | str] = [(BPF_LD_W_ABS, SECCOMP_DATA_ARCH), (BPF_JEQ_K, arch, None, "deny"),
                                            (BPF_LD_W_ABS, SECCOMP_DATA_NR)]
    if machine == "x86_64":  # x86-64 also takes x32 system calls: their numbers have X32_SYSCALL_BIT set
        program.append((BPF_JGE_K, X32_SYSCALL_BIT, "deny", None))
    program += [(BPF_JEQ_K, nr, "deny", None) for nr in denied]
    if not processes:
        program += [(BPF_JEQ_K, numbers["clone3"], "enosys", None), (BPF_JEQ_K, numbers["clone"], "clone", None)]
    program += [(BPF_RET_K, SECCOMP_RET_ALLOW)]
    if not processes:
        program += ["clone", (BPF_LD_W_ABS, SECCOMP_DATA_ARG0), (BPF_JSET_K, CLONE_THREAD, "allow", "deny"),
                    "allow", (BPF_RET_K, SECCOMP_RET_ALLOW), "enosys", (BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS)]
    program += ["deny", (BPF_RET_K, SECCOMP_RET_ERRNO | errno.EPERM)]
    return _assemble(program)


def install_filter(lib: Any, program: bytes) -> None:
    """Load the seccomp filter into this process (no_new_privs must be set): inherited by every child, never lifted."""
    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    check(lib.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


# Where glibc keeps a thread's kernel id in its thread descriptor (`struct pthread`'s `tid`, which fork(2)'s wrapper
# has the kernel write in the child, and raise(), pthread_kill() and recursive mutexes read), by architecture. A
# clone made here has the kernel write it too (CLONE_CHILD_SETTID); `Clone.verified` checks the place first.
GLIBC_TID_OFFSET = {"x86_64": 0x2D0, "aarch64": 0xD0}


class Clone:
    """fork(2) into new namespaces in one system call: clone(2) with namespace flags, called as os.fork calls fork
    (Python's before- and after-fork steps around it, the GIL held), a pidfd of the child made with it.

    Only where the C library's thread descriptor is known (glibc, x86-64 or aarch64) and found where it should be;
    elsewhere `make` returns None and a caller forks twice (unshare(2) then fork(2)) instead.
    """

    def __init__(self, machine: str, tid_address: int) -> None:
        self.lib = ctypes.PyDLL(None, use_errno=True)  # PyDLL: the GIL stays held, as os.fork holds it
        self.lib.syscall.restype = ctypes.c_long
        self.number = ARCHES[machine][1]["clone"]
        self.aarch64 = machine == "aarch64"
        self.tid = ctypes.c_void_p(tid_address)

    @classmethod
    def make(cls) -> Clone | None:
        """A Clone for this process's main thread, or None where its thread descriptor is not where it should be."""
        import platform
        import threading

        machine = os.uname().machine
        if platform.libc_ver()[0] != "glibc" or machine not in GLIBC_TID_OFFSET or machine not in ARCHES:
            return None
        lib = ctypes.CDLL(None)
        lib.pthread_self.restype = ctypes.c_void_p
        address = lib.pthread_self() + GLIBC_TID_OFFSET[machine]
        if not ctypes.c_int.from_address(address).value == glibc_tid() == threading.get_native_id():
            return None
        return cls(machine, address)

    def __call__(self, flags: int) -> tuple[int, int]:
        """(pid, pidfd) in the parent, (0, -1) in the child, which continues as a child of os.fork does; OSError."""
        import signal

        pidfd = ctypes.c_int(-1)
        flags |= signal.SIGCHLD | CLONE_PIDFD | CLONE_CHILD_SETTID
        api = ctypes.pythonapi
        api.PyOS_BeforeFork()
        # clone(flags, stack, parent_tid, child_tid, tls) on x86-64; aarch64 swaps the last two
        last = (0, self.tid) if self.aarch64 else (self.tid, 0)
        pid = self.lib.syscall(self.number, flags, 0, ctypes.byref(pidfd), *last)
        if pid == 0:
            api.PyOS_AfterFork_Child()
            return 0, -1
        err = ctypes.get_errno()
        api.PyOS_AfterFork_Parent()
        if pid < 0:
            raise OSError(err, f"clone: {os.strerror(err)}")
        return pid, pidfd.value


def glibc_tid() -> int:
    """The calling thread's id as the C library has it in its thread descriptor (read back from the CPU clock it
    makes of it: ((~tid) << 3) | 6), which may differ from the kernel's (gettid) in a process cloned without it."""
    lib = ctypes.CDLL(None)
    lib.pthread_self.restype = ctypes.c_void_p
    clock = ctypes.c_int()
    check(lib.pthread_getcpuclockid(ctypes.c_void_p(lib.pthread_self()), ctypes.byref(clock)), "pthread_getcpuclockid")
    return ~(clock.value >> 3)


def die_with_parent() -> None:
    """SIGKILL this process when its parent exits (the fork server, so the grader, was killed), even if it ignores its
    pipe: what starts a worker calls it first, sandboxed or not."""
    import signal

    try:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
