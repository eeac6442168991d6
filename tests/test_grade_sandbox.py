"""The OS sandbox around grading workers: what a notebook's process can see, touch, reach and leave behind.

Each test runs real notebook cells in a worker of one bubblewrap sandbox (autograder.grading.grade.sandbox), the way
`python -m autograder grade` does, and reads back what the cells printed. Without bubblewrap or user namespaces
these tests skip with the reason; under CI=true they fail instead (`./workbook test` installs bubblewrap there).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import support

from autograder import cli
from autograder.grading.grade.sandbox import bwrap, client, inside, staging
from autograder.settings import NOTEBOOK_MOUNTS

ROOT = Path(__file__).resolve().parent.parent
SECRET = "AKIA-sandbox-test-secret-0123456789"
LIMITS = {"check_timeout": 5.0, "cell_timeout": 20.0, "notebook_timeout": 60.0, "memory_mb": 1024, "output_bytes": 100_000}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the sandbox tests: {reason}")
    pytest.skip(reason)


BUILDER_MODE = '''

_real_self_test = _self_test


def _self_test(bounds):  # (the test's, staged into this sandbox only: a builder makes each notebook's PID 1)
    global CLONE
    error = _real_self_test(bounds)
    CLONE = None
    return error
'''


def builders_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sandbox started from now stages a fork server that makes each notebook's PID 1 as where one clone cannot
    (another C library or architecture): a builder process unshares the namespaces and forks it."""
    real = staging.stage

    def stage(dest: Path) -> None:
        real(dest)
        server = dest / "autograder" / "grading" / "grade" / "sandbox" / "forkserver.py"
        server.write_text(server.read_text() + BUILDER_MODE)  # (its bytecode no longer matches: compiled from this)

    monkeypatch.setattr(staging, "stage", stage)


@pytest.fixture(scope="module", params=["one clone", pytest.param("a builder", marks=pytest.mark.slow)])
def box(request: pytest.FixtureRequest) -> Any:
    """One sandbox for the module, started while the grader's environment holds a secret; every test of it runs with
    each notebook's PID 1 made by one clone (where the C library allows), and (slow) by a builder that forks it."""
    reason = bwrap.unavailable_reason()
    if reason:
        _unavailable(reason)
    os.environ["AWS_SECRET_ACCESS_KEY"] = SECRET
    try:
        with pytest.MonkeyPatch.context() as patch:
            if request.param == "a builder":
                builders_only(patch)
            started = client.Sandbox().start()
    except client.Unavailable as exc:
        _unavailable(str(exc))
    finally:
        os.environ.pop("AWS_SECRET_ACCESS_KEY", None)
    started.asked = request.param
    yield started
    started.close()


def test_each_notebooks_pid_1_is_made_by_one_clone_where_the_c_library_allows_else_by_a_builder(box: Any) -> None:
    from autograder.grading.grade.sandbox import linux

    one_clone = box.asked == "one clone" and linux.Clone.make() is not None
    assert box.ready["one_clone"] is one_clone
    assert run(box, "import os\nprint(os.getpid(), os.getppid())") == ["1 0\n"]  # PID 1, its parent outside


def test_a_clone_leaves_the_c_library_the_thread_id_the_kernel_gave_its_child() -> None:
    from autograder.grading.grade.sandbox import linux

    clone = linux.Clone.make()
    if clone is None:
        pytest.skip("not glibc on x86-64 or aarch64: a builder makes each notebook's PID 1")
    pid, pidfd = clone(0)
    if pid == 0:  # glibc reads its own copy of the id (raise from another thread, recursive locks): the kernel's
        os._exit(0 if linux.glibc_tid() == os.getpid() == threading.get_native_id() else 1)
    os.close(pidfd)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def outputs(message: dict[str, Any]) -> str:
    """The text a cell printed (stdout, results, errors), from a worker's cell message."""
    parts = []
    for out in message.get("outputs", []):
        parts.append(out.get("text") or out.get("data", {}).get("text/plain") or f"{out.get('ename')}: {out.get('evalue')}")
    return "".join(str(p) for p in parts)


def run(box: Any, *sources: str, files: dict[str, str] | None = None) -> list[str]:
    """Run the cells in one worker; what each printed."""
    cells = [{"kind": "code", "source": s} for s in sources]
    worker = box.launch({"plan": {"cells": cells, "limits": LIMITS}, "files": files or {}})
    try:
        printed = []
        deadline = time.monotonic() + 60
        while len(printed) < len(cells):
            message = json.loads(worker.channel.recv(deadline, 2**24))
            if message.get("op") == "cell":  # (audit reports come in between)
                printed.append(outputs(message))
        return printed
    finally:
        worker.close()


RUN = f"{uuid.uuid4().int % 10**6:06d}"  # in every test process's `sleep` argument: no earlier run's process matches


def seconds(n: int) -> str:
    """A `sleep` argument unique to this run (n seconds and a fraction)."""
    return f"{n}.{RUN}"


def nothing_left(marker: str) -> bool:
    """No process on the machine has `marker` in its command line."""
    return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.strip() == ""


PROBE_FILES = '''import json, os, sys
def can_write(path):
    try:
        with open(path, "w") as f:
            f.write("x")
        return True
    except OSError:
        return False
print(json.dumps({
    "cwd": os.getcwd(),
    "write_scratch": can_write("mine.txt"),
    "write_tmp": can_write("/tmp/mine.txt"),
    "write_runtime": can_write(os.path.join(sys.prefix, "planted.py")),
    "write_usr": can_write("/usr/planted.py"),
    "write_stage": can_write("/grader/autograder/planted.py"),
    "write_root": can_write("/planted.py") or can_write("/etc/ld.so.preload"),
    "seen": [p for p in PATHS if os.path.exists(p)],
    "listed": {p: sorted(os.listdir(p)) for p in LISTED if os.path.isdir(p)},
    "proc": os.listdir("/proc"),
}))'''


def test_a_notebook_writes_only_its_scratch_and_sees_none_of_the_graders_files(box: Any, tmp_path: Path) -> None:
    course = tmp_path / "course"
    (course / "submitted" / "classmate").mkdir(parents=True)
    (course / "gradebook.db").write_text("grades")
    venv_cfg = str(Path(sys.prefix) / "pyvenv.cfg")
    inside_cfg = bwrap.inside_path(venv_cfg)  # the same file, where the sandbox mounts the runtime
    paths = [str(ROOT / "solutions"), str(ROOT / "autograder" / "catalog.py"), str(ROOT / "README.md"), str(course),
             str(course / "gradebook.db"), *dict.fromkeys([venv_cfg, inside_cfg])]
    listed = [str(ROOT), str(Path.home()), "/"]
    got = json.loads(run(box, f"PATHS = {paths!r}\nLISTED = {listed!r}\n" + PROBE_FILES)[0])
    assert got["cwd"] == inside.SCRATCH and got["write_scratch"] and got["write_tmp"]
    assert not got["write_runtime"] and not got["write_usr"] and not got["write_stage"] and not got["write_root"]
    assert got["seen"] == [inside_cfg]  # the runtime, read-only, and nothing else of ours
    mounted = [bwrap.inside_path(p) for p in bwrap.runtime_paths()]
    for folder, names in got["listed"].items():  # at most the mount points leading to the runtime
        allowed = {Path(p).relative_to(folder).parts[0] for p in mounted if p.startswith(folder.rstrip("/") + "/")}
        if folder == "/":
            allowed |= {"bin", "dev", "etc", "grader", "lib", "lib32", "lib64", "proc", "sbin", "scratch", "tmp", "usr"}
        assert set(names) <= allowed, folder
    assert got["proc"] == []  # no process of the grader, the fork server or another notebook to read or signal


def test_a_module_planted_in_the_graders_folder_or_a_classmates_scratch_is_on_no_workers_path(box: Any) -> None:
    run(box, "open('glob.py', 'w').write('PLANTED = True')\nopen('/tmp/json.py', 'w').write('PLANTED = True')")
    printed = run(box, "import sys, glob\nprint(sys.path)\nprint(hasattr(glob, 'PLANTED'))")[0]
    path, planted = printed.splitlines()
    allowed = (inside.INSIDE, inside.SCRATCH, *(bwrap.inside_path(p) for p in bwrap.runtime_paths()))
    assert planted == "False"
    assert all(p in ("", inside.SCRATCH) or p.startswith(allowed) for p in eval(path)), path


def test_the_environment_holds_only_what_a_notebook_needs(box: Any) -> None:
    env = json.loads(run(box, "import os, json\nprint(json.dumps(dict(os.environ)))")[0])
    assert SECRET not in json.dumps(env)
    assert set(env) <= {*inside.ENVIRONMENT, "PATH", "PWD"}
    assert env["NBGRADER_EXECUTION"] == "autograde" and env["HOME"] == inside.SCRATCH


def test_no_network(box: Any) -> None:
    code = '''import socket
for host in ("127.0.0.1", "1.1.1.1"):
    try:
        socket.create_connection((host, 80), timeout=2)
        print("connected", host)
    except OSError as exc:
        print("refused", host, exc.errno)'''
    printed = run(box, code)[0]
    assert "connected" not in printed and printed.count("refused") == 2


def test_the_submissions_files_reach_the_scratch_as_data(box: Any) -> None:
    printed = run(box, "print(open('data/points.csv').read())", files={"data/points.csv": "eCx5CjEsMgo="})[0]
    assert printed == "x,y\n1,2\n\n"


def test_processes_a_notebook_starts_are_gone_when_it_ends_even_after_setsid_or_a_double_fork(box: Any) -> None:
    code = f'''import os, subprocess, time
subprocess.Popen(["setsid", "sleep", "{seconds(3011)}"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{seconds(3012)}"])
    os._exit(0)
time.sleep(0.3)
print(subprocess.run(["sh", "-c", "ls /proc | wc -l"], capture_output=True, text=True).stdout)'''
    run(box, code)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (nothing_left(f"sleep {seconds(3011)}") and nothing_left(f"sleep {seconds(3012)}")):
        time.sleep(0.1)
    assert nothing_left(f"sleep {seconds(3011)}") and nothing_left(f"sleep {seconds(3012)}")


def test_killing_a_runaway_worker_from_outside_takes_every_process_it_started(box: Any) -> None:
    code = f'''import signal, subprocess
signal.signal(signal.SIGALRM, signal.SIG_IGN)
subprocess.Popen(["sleep", "{seconds(3013)}"], start_new_session=True)
print("looping", flush=True)
while True:
    pass'''
    worker = box.launch({"plan": {"cells": [{"kind": "code", "source": code}], "limits": LIMITS}, "files": {}})
    time.sleep(1.5)
    assert worker.exitcode() is None
    worker.kill()
    assert worker.exitcode(5) == -signal.SIGKILL
    worker.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not nothing_left(f"sleep {seconds(3013)}"):
        time.sleep(0.1)
    assert nothing_left(f"sleep {seconds(3013)}")


def test_a_notebook_cannot_signal_the_grader_the_fork_server_or_another_notebook(box: Any) -> None:
    victim_done: list[str] = []
    victim = threading.Thread(target=lambda: victim_done.extend(run(box, "import time\ntime.sleep(3)\nprint('survived')")))
    victim.start()
    time.sleep(0.5)
    code = f'''import os, signal
for pid in ({os.getpid()}, {os.getppid()}, 1):
    try:
        os.kill(pid, 0)
        print("reached", pid)
    except OSError as exc:
        print("not reached", pid, exc.errno)
os.kill(-1, signal.SIGKILL)  # every process this one may signal'''
    attacker = box.launch({"plan": {"cells": [{"kind": "code", "source": code}], "limits": LIMITS}, "files": {}})
    attacker.exitcode(10)
    attacker.close()
    victim.join(30)
    assert victim_done == ["survived\n"]
    assert box.alive and run(box, "print('still serving')") == ["still serving\n"]


def test_a_notebooks_own_autograder_imports_work_in_the_sandbox(box: Any) -> None:
    code = '''from autograder import check
from autograder.workbook import demo_size, draw_graph, make_moons, plot_decision_boundary, plot_loss, progress, summary
xs, ys = make_moons(20)
print(len(xs), demo_size(100, 5))
summary("add_forward")
check("add_forward")'''
    printed = run(box, code)[0]
    assert "\n20 5\n" in printed and "Error" not in printed  # after demo_size's one-line grading-size label


def test_importing_a_grader_module_fails_and_raises_an_audit_event(box: Any) -> None:
    code = '''import sys
seen = []
sys.addaudithook(lambda event, args: seen.append(args[0]) if event == "autograder.grader_module" else None)
for name in ("autograder.catalog", "autograder.numeric", "autograder.grading.grade.runner", "autograder.checks"):
    try:
        __import__(name)
        print("imported", name)
    except ImportError:
        print("refused", name)
print(seen)'''
    printed = run(box, code)[0]
    assert "imported" not in printed and printed.count("refused") == 4
    assert "'autograder.catalog'" in printed and "'autograder.grading.grade.runner'" in printed


ANSWER_SIDE = ("catalog", "expressions", "numeric", "net_reference", "judge", "checks", "truth")


def test_a_grading_worker_holds_no_answer_side_module(box: Any) -> None:
    printed = run(box, "import sys\nprint(sorted(sys.modules))")[0]
    names = eval(printed)
    assert [n for n in names if n.split(".")[0] == "autograder" and set(n.split(".")[1:]) & set(ANSWER_SIDE)] == []
    assert "autograder.probes" in names  # what the worker does hold


def test_grade_refuses_in_one_line_without_a_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    (tmp_path / "gradebook.db").touch()  # a course folder (grade outside one says so first)
    code = cli.main(["grade", "ps1", "--course", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "apt-get install bubblewrap" in err and "--unsafe-no-sandbox" in err


@pytest.mark.slow
def test_a_stopped_fork_server_is_replaced_and_the_next_notebook_is_graded() -> None:
    if bwrap.unavailable_reason():
        _unavailable(str(bwrap.unavailable_reason()))
    pool = client.Pool()
    try:
        first = pool.current()
        assert first.proc is not None
        inside = subprocess.run(["pgrep", "-P", str(first.proc.pid)], capture_output=True, text=True).stdout.split()
        for pid in inside:  # bubblewrap's init, then the fork server under it
            for child in [pid, *subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True).stdout.split()]:
                os.kill(int(child), signal.SIGSTOP)
        t0 = time.monotonic()
        worker = pool.launch({"plan": {"cells": [{"kind": "code", "source": "print('graded')"}], "limits": LIMITS},
                              "files": {}})
        assert time.monotonic() - t0 < client.SPAWN_TIMEOUT + client.SANDBOX_START_TIMEOUT
        message = {}
        deadline = time.monotonic() + 60
        while message.get("op") != "cell":
            message = json.loads(worker.channel.recv(deadline, 2**24))
        assert outputs(message) == "graded\n"
        assert run(pool.current(), "print('graded')") == ["graded\n"]
        worker.close()
        assert pool.box is not first and first.proc.poll() is not None  # the stuck sandbox was killed
    finally:
        pool.close()


@pytest.mark.slow
def test_unsafe_no_sandbox_grades_the_same_and_marks_every_row_and_the_feedback(tmp_path: Path) -> None:
    if bwrap.unavailable_reason():
        _unavailable(str(bwrap.unavailable_reason()))
    root = support.make_course(tmp_path / "course")
    students = ["correct_a", "mul_no_swap"]
    for student in students:
        support.submit(root, student, support.submission(root, ["derivatives", "engine"], support.EDITS[student]))
    unsafe = support.grade_ours(root, "--unsafe-no-sandbox", "--csv", str(root / "unsafe.csv"))
    assert unsafe.returncode == 0, unsafe.stderr
    unsafe_cells = support.grade_cells(root, students)
    rows = list(csv.DictReader(open(root / "unsafe.csv")))
    assert len(rows) == len(students) and all(client.UNSANDBOXED in r["reason"] for r in rows)
    table = [ln for ln in unsafe.stdout.splitlines() if ln.startswith(tuple(students))]
    assert len(table) == len(students) and all("UNSANDBOXED" in ln for ln in table)
    for student in students:
        graded = (root / "autograded" / student / support.ASSIGNMENT).glob("*.ipynb")
        assert all(client.UNSANDBOXED in nb.read_text() for nb in graded)
    safe = support.grade_ours(root, "--csv", str(root / "safe.csv"))  # the settings changed: everything is regraded
    assert safe.returncode == 0, safe.stderr
    assert "skipped (unchanged)" not in safe.stdout and "UNSANDBOXED" not in safe.stdout
    assert support.grade_cells(root, students) == unsafe_cells


def test_a_runtime_below_a_notebooks_own_tmpfs_is_mounted_elsewhere() -> None:
    # a checkout (and its .venv) in /tmp would be hidden by each notebook's private /tmp
    assert bwrap.inside_path("/tmp/ci/.venv") == bwrap.RELOCATED + "/tmp/ci/.venv"
    assert bwrap.inside_path("/tmp") == bwrap.RELOCATED + "/tmp"
    assert bwrap.inside_path("/tmpdir/.venv") == "/tmpdir/.venv"
    assert bwrap.inside_path("/usr/lib/python3") == "/usr/lib/python3"


def test_the_teaching_aids_are_staged_unchanged_and_the_workbook_by_its_stand_in(tmp_path: Path) -> None:
    staging.stage(tmp_path / "staged")
    aids, staged = ROOT / "autograder" / "aids", tmp_path / "staged" / "autograder"
    files = sorted(p.relative_to(aids) for p in aids.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert files and all((staged / "aids" / f).read_bytes() == (aids / f).read_bytes() for f in files)
    standin = ROOT / "autograder" / "grading" / "grade" / "standin" / "workbook.py"
    assert (staged / "workbook.py").read_bytes() == standin.read_bytes()
    assert not (staged / "checks").exists() and not (staged / "notebook.py").exists()


def test_nothing_writable_is_shared_between_notebooks_and_dev_holds_only_device_nodes(box: Any) -> None:
    leave = '''import os
for path in ("/dev/shm/left", "/tmp/left", "left"):
    open(path, "w").write("for the next notebook")
try:
    open("/dev/planted", "w").write("x")
    print("wrote /dev")
except OSError as exc:
    print("refused", exc.errno)'''
    assert run(box, leave) == ["refused 30\n"]  # EROFS: a read-only /dev of its own
    look = '''import os, json
print(json.dumps({"dev": sorted(os.listdir("/dev")), "shm": os.listdir("/dev/shm"), "tmp": os.listdir("/tmp"),
                  "here": os.listdir(".")}))'''
    seen = json.loads(run(box, look)[0])
    assert seen["shm"] == seen["tmp"] == seen["here"] == []
    assert set(seen["dev"]) <= {*inside.DEVICES, "fd", "stdin", "stdout", "stderr", "shm"}


def test_each_writable_mount_is_bounded_and_memory_no_limit_counts_is_refused(box: Any) -> None:
    code = '''import os
def fill(path):
    try:
        with open(path, "wb") as f:
            while True:
                f.write(b"x" * 2**20)
    except OSError as exc:
        return os.path.getsize(path) // 2**20, exc.errno
    finally:
        os.remove(path)
print(fill("/dev/shm/fill"), fill("/tmp/fill"))
for make in (lambda: os.memfd_create("hold"), lambda: __import__("socket").socketpair()):
    try:
        make()
        print("made")
    except OSError as exc:
        print("refused", exc.errno)'''
    printed = run(box, code)[0].splitlines()
    shm, tmp = NOTEBOOK_MOUNTS["shm"][0] // 2**20, NOTEBOOK_MOUNTS["tmp"][0] // 2**20
    assert printed[0] == f"({shm}, 28) ({tmp}, 28)"  # ENOSPC at each mount's own size
    assert printed[1:] == ["refused 1", "refused 1"]


def test_a_notebook_past_its_memory_limit_in_tmpfs_files_is_killed_by_its_own_cgroup(box: Any) -> None:
    if not box.cgroups.available:
        pytest.skip(f"no cgroup per notebook here ({box.cgroups.why}): the unprivileged mode bounds each mount instead")
    code = '''import os
for n in range(4):  # 4 x 200 MiB in the scratch folder (each file under RLIMIT_FSIZE), then 400 MiB of memory
    with open(f"hold{n}", "wb") as f:
        for _ in range(200):
            f.write(b"x" * 2**20)
hog = bytearray(400 * 2**20)
for i in range(0, len(hog), 4096):
    hog[i] = 1
print("held it all")'''
    limits = {**LIMITS, "memory_mb": 512}
    worker = box.launch({"plan": {"cells": [{"kind": "code", "source": code}], "limits": limits}, "files": {}})
    try:
        with pytest.raises(EOFError):
            worker.channel.recv(time.monotonic() + 60, 2**24)
        assert worker.exitcode(10) == -signal.SIGKILL and worker.out_of_memory()
    finally:
        worker.close()
    assert run(box, "print('next')") == ["next\n"]


SURVIVORS = f'''import ctypes, os, signal, subprocess, sys, time
libc = ctypes.CDLL(None)
def survivor(tag):
    libc.prctl(1, 0)  # PR_SET_PDEATHSIG 0: "my parent died" no longer ends it
    os.execvp("sleep", ["sleep", tag])
if os.fork() == 0:  # setsid, then a double fork
    os.setsid()
    if os.fork() == 0:
        survivor("{seconds(5101)}")
    os._exit(0)
if os.fork() == 0:  # stops itself
    libc.prctl(1, 0)
    os.kill(os.getpid(), signal.SIGSTOP)
    survivor("{seconds(5102)}")
subprocess.Popen(["sleep", "{seconds(5103)}"], start_new_session=True, preexec_fn=lambda: libc.prctl(1, 0))
libc.prctl(1, 0)  # the notebook's own process too
time.sleep(0.5)
print("started", flush=True)
while True:
    time.sleep(1)'''


def test_no_process_of_a_notebook_outlives_its_kill_whatever_it_did_to_its_death_signal(box: Any) -> None:
    worker = box.launch({"plan": {"cells": [{"kind": "code", "source": SURVIVORS}], "limits": LIMITS}, "files": {}})
    deadline = time.monotonic() + 30
    while not nothing_left(f"sleep {seconds(5103)}") and time.monotonic() < deadline and nothing_left(f"sleep {seconds(5101)}"):
        time.sleep(0.05)
    time.sleep(0.3)
    assert not nothing_left(f"sleep {seconds(5101)}") and not nothing_left(f"sleep {seconds(5103)}"), "the survivors never started"
    worker.kill()  # returns once the server reports the notebook's PID namespace gone
    assert worker.exitcode() == -signal.SIGKILL
    assert all(nothing_left(f"sleep {seconds(5100 + i)}") for i in (1, 2, 3)), "a process outlived its notebook"
    worker.close()


def test_the_unprivileged_mode_refuses_new_processes_and_says_so() -> None:
    from autograder.grading.grade.sandbox.cgroup import UNPRIVILEGED_MODE, Cgroups

    if bwrap.unavailable_reason():
        _unavailable(str(bwrap.unavailable_reason()))
    unprivileged = client.Sandbox(Cgroups(enabled=False)).start()
    try:
        assert unprivileged.cgroups.mode == UNPRIVILEGED_MODE and "new processes" in UNPRIVILEGED_MODE
        code = '''import os, subprocess, threading
for make in (os.fork, lambda: subprocess.run(["true"]), lambda: os.memfd_create("x")):
    try:
        make()
        print("made")
    except OSError as exc:
        print("refused", exc.errno)
t = threading.Thread(target=print, args=("a thread",))
t.start()
t.join()'''
        assert run(unprivileged, code) == ["refused 1\nrefused 1\nrefused 1\na thread\n"]
    finally:
        unprivileged.close()


def test_the_summary_names_the_sandbox_mode_in_force() -> None:
    from autograder.grading.grade.sandbox.cgroup import ROOT_MODE, UNPRIVILEGED_MODE

    mode = client.Mode()
    mode.pool.mode = ROOT_MODE
    assert mode.describe() == f"sandbox: bubblewrap, {ROOT_MODE}"
    mode.pool.mode = UNPRIVILEGED_MODE
    assert "unprivileged" in mode.describe()
    mode.unsafe = True
    assert mode.describe() == "sandbox: none (--unsafe-no-sandbox)"


CPU_HOG = '''import os, time
children = []
for _ in range(120):  # busy processes: without a CPU bound per notebook, the scheduler shares per process
    pid = os.fork()
    if pid == 0:
        while True:
            pass
    children.append(pid)
print("hogging", flush=True)
time.sleep(60)'''

CPU_SHARE = '''import time
time.sleep(1.0)  # the hog's processes are all running by now
wall, cpu = time.monotonic(), time.process_time()
while time.monotonic() - wall < 3.0:
    pass
print(round((time.process_time() - cpu) / (time.monotonic() - wall), 3))'''


def test_a_notebook_running_many_busy_processes_takes_no_more_cpu_than_a_classmate(box: Any) -> None:
    """The share of a CPU a classmate's busy loop gets beside a notebook of 120 busy processes: about what it got alone
    a moment before (each notebook's cpu cgroup weighs the same), where sharing per process would give it under 1/60
    of that. Measured against its own share alone, so that other work on the machine moves both alike."""
    if not box.cgroups.available:
        pytest.skip(f"no cgroup per notebook here ({box.cgroups.why})")
    alone = float(run(box, CPU_SHARE)[0])
    hog = box.launch({"plan": {"cells": [{"kind": "code", "source": CPU_HOG}], "limits": LIMITS}, "files": {}})
    try:
        deadline = time.monotonic() + 30
        message: dict[str, Any] = {}
        while message.get("op") != "audit" or "fork" not in str(message.get("event")):
            message = json.loads(hog.channel.recv(deadline, 2**24))
        share = float(run(box, CPU_SHARE)[0])
    finally:
        hog.close()
    assert share > 0.3 * alone, (f"a classmate got {share:.3f} of a CPU beside a notebook of 120 busy processes, "
                                 f"{alone:.3f} alone just before")


THREAD_HOG = '''import hashlib, threading, time
data = b"x" * 2**22
def burn():
    while True:
        hashlib.sha256(data).digest()  # (releases the GIL: every thread runs at once)
threading.stack_size(2**16)
started = 0
try:
    for _ in range(60):
        threading.Thread(target=burn, daemon=True).start()
        started += 1
except RuntimeError:
    pass
time.sleep(60)'''


def test_in_the_unprivileged_mode_a_notebooks_busy_threads_weigh_as_one_classmate_on_the_cpu() -> None:
    """Without cgroups, each notebook is a session of its own: the kernel's autogroup shares the CPU per session."""
    from autograder.grading.grade.sandbox.cgroup import Cgroups

    if bwrap.unavailable_reason():
        _unavailable(str(bwrap.unavailable_reason()))
    try:
        autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
        cpu_root = any(line.split(":")[1] in ("cpu", "cpu,cpuacct") and line.split(":")[2] == "/"
                       for line in Path("/proc/self/cgroup").read_text().splitlines())
    except (OSError, IndexError):
        autogroup = cpu_root = False
    if not (autogroup and cpu_root):
        pytest.skip("the kernel groups no process by session here (autogroup off, or a cpu cgroup of its own)")
    unprivileged = client.Sandbox(Cgroups(enabled=False)).start()
    try:
        hog = unprivileged.launch({"plan": {"cells": [{"kind": "code", "source": THREAD_HOG}], "limits": LIMITS},
                                   "files": {}})
        try:
            time.sleep(2)  # its threads are running by now (they send nothing to wait for)
            share = float(run(unprivileged, CPU_SHARE)[0])
        finally:
            hog.close()
    finally:
        unprivileged.close()
    assert share > 0.3, f"a classmate got {share:.3f} of a CPU beside a notebook of busy threads"


def slow_spawns(monkeypatch: pytest.MonkeyPatch, slow: set[int], delay: float) -> None:
    """Every sandbox started from now stages a fork server that stalls `delay` s before its spawns numbered `slow`
    (counted from 1), as a fork server on a machine too loaded to fork would: it answers nothing meanwhile."""
    from autograder.grading.grade.sandbox import client, staging

    real = staging.stage

    def stage(dest: Path) -> None:
        real(dest)
        server = dest / "autograder" / "grading" / "grade" / "sandbox" / "forkserver.py"
        server.write_text(server.read_text() + f'''

_SPAWNS = [0]
_real_spawn = spawn


def spawn(channel_fd, cgroup_fds, bounds):  # (the test's stall, staged into this sandbox only)
    _SPAWNS[0] += 1
    if _SPAWNS[0] in {sorted(slow)!r}:
        time.sleep({delay!r})
    return _real_spawn(channel_fd, cgroup_fds, bounds)
''')  # (its bytecode no longer matches: the server compiles this source)

    monkeypatch.setattr(staging, "stage", stage)
    monkeypatch.setattr(client, "SPAWN_TIMEOUT", 1.0)  # (10 s in a batch; the stall is scaled with it)


CLASSMATE = "import time\ntime.sleep(4)  # still running when the slow spawn times out, and after it\nprint('classmate done')"


def first_cell(worker: Any) -> str:
    """What the worker's first cell printed (audit reports on the way are skipped)."""
    deadline = time.monotonic() + 60
    while True:
        message = json.loads(worker.channel.recv(deadline, 2**24))
        if message.get("op") == "cell":
            return outputs(message)


def launch(pool: Any, source: str) -> Any:
    return pool.launch({"plan": {"cells": [{"kind": "code", "source": source}], "limits": LIMITS}, "files": {}})


@pytest.mark.slow
def test_a_spawn_that_stalls_past_its_timeout_is_retried_and_classmates_workers_run_on(monkeypatch: pytest.MonkeyPatch) -> None:
    if bwrap.unavailable_reason():
        _unavailable(str(bwrap.unavailable_reason()))
    slow_spawns(monkeypatch, {3}, delay=3.0)  # past SPAWN_TIMEOUT (1 s), within PING_TIMEOUT: slow, not stuck
    pool = client.Pool()
    try:
        classmates = [launch(pool, CLASSMATE) for _ in range(2)]  # spawns 1 and 2, running through the stall
        box = pool.current()
        slow = launch(pool, "print('the slow one, graded')")  # spawn 3 stalls and times out; spawn 4 is its retry
        assert first_cell(slow) == "the slow one, graded\n"
        assert [first_cell(w) for w in classmates] == ["classmate done\n"] * 2
        assert pool.current() is box and box.alive and next(box.ids) == 5  # the same sandbox; 4 spawns asked
        for worker in (*classmates, slow):
            worker.close()
    finally:
        pool.close()


@pytest.mark.slow
def test_a_spawn_that_stalls_again_when_retried_costs_its_notebook_only_with_the_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from autograder.grading.grade import runner
    from autograder.settings import Limits

    if bwrap.unavailable_reason():
        _unavailable(str(bwrap.unavailable_reason()))
    slow_spawns(monkeypatch, {3, 4}, delay=2.5)  # the first try and its retry both time out
    pool = client.Pool()
    monkeypatch.setattr(client.MODE, "pool", pool)
    monkeypatch.setattr(client.MODE, "unsafe", False)
    try:
        classmates = [launch(pool, CLASSMATE) for _ in range(2)]
        box = pool.current()
        with pytest.raises(runner.Stopped, match="the grading sandbox could not start a worker: the sandbox did not "
                                                 "start a worker within 1 s"):
            runner.Session([{"kind": "code", "source": "print('never run')"}], Limits(), {})  # the notebook's 0 and why
        assert [first_cell(w) for w in classmates] == ["classmate done\n"] * 2
        assert pool.current() is box and box.alive
        after = launch(pool, "print('the next notebook')")
        assert first_cell(after) == "the next notebook\n"
        for worker in (*classmates, after):
            worker.close()
    finally:
        pool.close()
