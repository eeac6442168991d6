"""How long a learner waits for a check: the slowest check of each notebook on its slowest known mistake, on busy
cores, from a cold start (the learner's first check in a new kernel: nothing the grader remembers yet).

Run by hand: .venv/bin/python benchmarks/bench_checks.py [--busy N] [--notebook 04_bricks] [--no-engine-file] [--results]

Every known mistake of tests/checks/notebook_corpus.py (MISTAKES, its held-out ones and DIAGNOSED) is written into the
workbook's solution notebook, whose cells then run as a learner's kernel runs them: the check cells call
`autograder.check(...)` with what the learner's notebook holds (the hidden tests are not in it), the other cells
run as under nbgrader (demos short). Each mistake runs in a process forked from one that has imported everything
the notebook's first cell imports and has run no check, so nothing is remembered from another mistake. Each
check call is timed: wall seconds (what the learner waits) and the CPU seconds of the process. Then the same for
tests/checks/mistakes.py's engine mistakes, each check of the catalogue timed alone on the buggy engine (what
`python -m autograder check engine.py` runs). `--busy N` (default 2) keeps N other processes spinning meanwhile:
the 2 busy cores the target is set on. With --results: benchmarks/results/bench_checks.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "workbook"))  # the support modules
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "checks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import Results, add_option, recording, slug

TARGET = 1.0  # seconds: every check a learner runs answers within this


def spin() -> None:
    """A busy core: a process that never sleeps (killed by the benchmark)."""
    while True:
        pass


def busy(n: int) -> list[int]:
    """Start n spinning processes; their pids."""
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)
            spin()
        pids.append(pid)
    return pids


def in_child(work: Any, *args: Any) -> Any:
    """Run work(*args) in a forked child (cold: nothing remembered from other runs); its JSON result."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            data = json.dumps(work(*args)).encode()
        except BaseException as exc:
            data = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data or b'{"error": "no answer"}')


def hidden_removed(source: str) -> str:
    """A grade cell as the learner's notebook holds it: the instructor's hidden tests are not released."""
    out, hidden = [], False
    for line in source.splitlines():
        if line.strip() == "### BEGIN HIDDEN TESTS":
            hidden = True
        elif line.strip() == "### END HIDDEN TESTS":
            hidden = False
        elif not hidden and line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"):
            out.append(line)
    return "\n".join(out)


def run_notebook(cells: list[tuple[str, bool]]) -> list[dict[str, Any]]:
    """Run the cells in one namespace; time each check cell's `check(...)` calls (learner's mode); [{...}] per call."""
    import notebook_corpus

    from autograder import check

    timed = []
    ns: dict[str, Any] = {"__name__": "__main__"}
    for index, (source, is_check) in enumerate(cells):
        if not is_check:
            os.environ["NBGRADER_EXECUTION"] = "autograde"  # demos run short, as they do under nbgrader
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    exec(compile(source, f"<cell {index}>", "exec"), ns)
            except BaseException:
                pass
            finally:
                os.environ.pop("NBGRADER_EXECUTION", None)
                notebook_corpus._close_figures()
            continue
        for names, _ in notebook_corpus.check_calls(source):
            wall, cpu = time.perf_counter(), time.process_time()
            with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
                check(*names, ns=ns)
            timed.append({"checks": list(names), "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu})
    return timed


def notebook_cells(variant: Any) -> list[tuple[str, bool]]:
    """(source, is a check cell) of the variant's notebook, as the learner's copy holds it."""
    import notebook_corpus

    cells = []
    for cell in notebook_corpus.notebook(variant).cells:
        if cell.cell_type != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        source = hidden_removed(cell.source)
        cells.append((source, bool(meta.get("grade") and not meta.get("solution") and "check(" in source)))
    return cells


def engine_checks(name: str) -> list[dict[str, Any]]:
    """Each check of the catalogue alone on tests/checks/mistakes.py's engine with mistake `name`, timed."""
    import mistakes

    from autograder import checks

    ns = mistakes.learner_namespace(name)
    timed = []
    for c in checks.CHECKS:
        if c.group not in ("engine", "net"):
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        checks.run_checks([c], dict(ns))
        timed.append({"checks": [c.name], "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu})
    return timed


def warm_imports() -> None:
    """What a learner's kernel has loaded before the first check (the notebooks' imports cell), and the corpus."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import mistakes  # noqa: F401
    import notebook_corpus  # noqa: F401
    import numpy  # noqa: F401

    import autograder.checks
    import autograder.notebook
    import autograder.workbook  # noqa: F401


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", type=int, default=2, help="spinning processes beside the checks (default 2)")
    parser.add_argument("--notebook", action="append", help="only this notebook (repeatable), e.g. 04_bricks")
    parser.add_argument("--no-engine-file", action="store_true", help="skip tests/checks/mistakes.py's engine mistakes")
    add_option(parser, "bench_checks")
    args = parser.parse_args()
    with recording("bench_checks", args.results) as rec:
        code = slowest_checks(args, rec)
        rec.ok = code != 2
    return code


def slowest_checks(args: argparse.Namespace, rec: Results) -> int:
    """Every known mistake, cold, beside `args.busy` spinners; print and record the slowest check of each notebook.
    0 when every one answers within TARGET, 1 when one does not, 2 when a run failed."""
    warm_imports()
    import mistakes
    import notebook_corpus

    variants = {**{k: v for k, v in notebook_corpus.MISTAKES.items()},
                **{k: d.variant for k, d in notebook_corpus.DIAGNOSED.items()}}
    if args.notebook:
        variants = {k: v for k, v in variants.items() if v.notebook in args.notebook}
    spinners = busy(args.busy)
    slowest: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    try:
        for name, variant in sorted(variants.items(), key=lambda kv: (kv[1].notebook, kv[0])):
            got = in_child(lambda v=variant: run_notebook(notebook_cells(v)))
            if isinstance(got, dict):
                print(f"{variant.notebook} {name}: {got['error']}")
                return 2
            for call in got:
                best = slowest.get(variant.notebook)
                if best is None or call["wall_s"] > best["wall_s"]:
                    slowest[variant.notebook] = {**call, "mistake": name}
        if not args.no_engine_file and not args.notebook:
            for name in sorted(mistakes.BY_NAME):
                got = in_child(engine_checks, name)
                if isinstance(got, dict):
                    print(f"engine file {name}: {got['error']}")
                    return 2
                for call in got:
                    best = slowest.get("engine file (.py)")
                    if best is None or call["wall_s"] > best["wall_s"]:
                        slowest["engine file (.py)"] = {**call, "mistake": name}
    finally:
        for pid in spinners:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    print(f"\nthe slowest check of each notebook on its slowest known mistake ({len(variants)} notebook mistakes"
          f"{'' if args.no_engine_file or args.notebook else f', {len(mistakes.BY_NAME)} engine-file mistakes'}; "
          f"cold, each in its own process; {args.busy} other processes spinning; {time.perf_counter() - t0:.0f} s in all)")
    print(f"{'notebook':20s} {'wall s':>7s} {'CPU s':>6s}  {'within 1 s':10s} check (mistake)")
    for nb, call in sorted(slowest.items()):
        ok = "yes" if call["wall_s"] <= TARGET else "NO"
        print(f"{nb:20s} {call['wall_s']:7.3f} {call['cpu_s']:6.3f}  {ok:10s} {', '.join(call['checks'])} ({call['mistake']})")
    print(f"load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs (the spinners "
          "included; other work on the machine adds to the wall times)")
    for nb, call in sorted(slowest.items()):
        key = "engine_file" if nb.startswith("engine file") else f"nb{slug(nb)}"
        what = f"{nb}: the slowest check ({', '.join(call['checks'])}) on its slowest mistake ({call['mistake']})"
        rec.figure(f"{key}_s", call["wall_s"], "s", what + ", wall", 2)
        rec.figure(f"{key}_cpu_s", call["cpu_s"], "s", what + ", CPU", 3)
    rec.figure("slowest_s", max(c["wall_s"] for c in slowest.values()), "s", "the slowest check of all, wall", 2)
    rec.figure("slowest_cpu_s", max(c["cpu_s"] for c in slowest.values()), "s", "the most CPU one check took", 2)
    rec.figure("target_s", TARGET, "s", "the target: every check a learner runs answers within it", 1)
    rec.figure("mistakes", len(variants), "mistakes", "notebook mistakes run", 0)
    rec.note(f"{args.busy} processes spinning beside the checks; each mistake cold, in a process of its own")
    return 0 if all(c["wall_s"] <= TARGET for c in slowest.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
