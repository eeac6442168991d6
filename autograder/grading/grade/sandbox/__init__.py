"""The OS sandbox around every notebook's worker: one bubblewrap sandbox per batch, a fork server inside it, and per
notebook its own user, PID, mount, network and IPC namespaces, its own size-bounded writable mounts, and (as root)
its own memory and pids cgroups.

    inside      what runs inside the sandbox, listed once (modules, mount points, environment, sizes)
    staging     copies that code into a folder the sandbox mounts read-only
    bwrap       the bubblewrap command line
    cgroup      per-notebook cgroups (root), or the unprivileged mode's name
    frames      a worker's channel as the grader reads it: whole frames, every read and write before a deadline
    client      the grader's side: Sandbox, Worker, Pool, the unsandboxed mode, MODE
    warm        the unsandboxed mode's fork server's preload
    linux       syscall numbers, prctl constants and the seccomp filter, named once
    forkserver  the sandbox side: the fork server, each notebook's namespaces and its learner process

The fork server imports this package inside the sandbox: importing it loads nothing (import the module you need).
"""
