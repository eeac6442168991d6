"""How well and how fast `python -m autograder similarity` finds the planted copies of a synthetic class.

Run by hand (a few minutes; the 2,000-learner class dominates):
    .venv/bin/python benchmarks/bench_similarity.py [--students 200 2000] [--seed 0] [--dolos DIR] [--results]

For each class size, a synthetic class of the real workbook (tests/similarity_class.py: independent learners in the
styles of the mistake corpus and the engine styles, and planted verbatim, renamed, reordered and ring copies and
micrograd pastes) is written as a course, and the command's own steps run on it in this process, timed (wall and
CPU seconds). Printed (with --results also written to benchmarks/results/bench_similarity.json), side by side for
the same class:
- this report: precision and recall of the planted pairs in the top k of its ranking (k = the number planted), the
  pairs it flags (z >= Similarity.flag_z) that were not planted, the highest z of an unplanted pair and the lowest of
  a planted one, per kind;
- copydetect as an instructor would run it out of the box (`CopyDetector`, each learner's solution cells as one file,
  the handout as its boilerplate folder, micrograd as a reference file), ranked by its similarity (the mean of the two
  directions), for classes up to 500 learners (its all-pairs loop is quadratic in Python);
- with --dolos DIR (a folder where `npm install @dodona/dolos-lib` was run): Dolos on the same files, the handout as
  its ignored template, ranked by its similarity (also up to 500 learners).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "workbook"))  # the support modules
sys.path.insert(0, str(ROOT / "tests" / "checks"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import similarity_class  # noqa: E402
from results import Results, add_option, recording  # noqa: E402

from autograder.settings import Limits, Similarity  # noqa: E402
from autograder.similarity.command import run  # noqa: E402
from autograder.similarity.handout import load_handout  # noqa: E402
from autograder.similarity.public import load_source  # noqa: E402
from autograder.similarity.read import ClassBounds, read_class  # noqa: E402

PLAIN_LIMIT = 500  # learners: copydetect's own all-pairs loop past this takes too long to be worth a row

DOLOS_SCRIPT = """
import { Dolos } from "@dodona/dolos-lib";
const [ignore, ...files] = process.argv.slice(2);
const dolos = new Dolos({ language: "python" });
const report = await dolos.analyzePaths(files, ignore);
for (const p of report.allPairs()) console.log(JSON.stringify([p.leftFile.path, p.rightFile.path, p.similarity]));
"""


def key(a: str, b: str) -> tuple[str, str]:
    """A pair as the synthetic class names it: students sorted, a public engine second."""
    return (a, b) if b == similarity_class.MICROGRAD else tuple(sorted((a, b)))  # type: ignore[return-value]


def at_k(ranked: list[tuple[str, str]], planted: dict) -> dict:
    """Precision and recall of the planted pairs in the top k = len(planted) of `ranked`."""
    k = len(planted)
    hits = sum(1 for p in ranked[:k] if p in planted)
    return {"k": k, "precision_at_k": hits / k, "recall_at_k": hits / k,
            "planted_found_anywhere": sum(1 for p in planted if p in set(ranked))}


def ours(course: Path, planted: dict) -> dict:
    from autograder.settings import load_config

    config = load_config(course / "nbgrader_config.py")
    wall, cpu = time.perf_counter(), time.process_time()
    report, _ = run(similarity_class.ASSIGNMENT, config, str(course))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ranked = [key(m.a, m.b) for m in report.ranking.matches]
    by_pair = {key(m.a, m.b): m for m in report.ranking.matches}
    unplanted = [m for p, m in by_pair.items() if p not in planted]
    by_kind: dict[str, float] = {}
    for p, kind in planted.items():
        by_kind[kind] = min(by_kind.get(kind, float("inf")), by_pair[p].z if p in by_pair else 0.0)
    return {**at_k(ranked, planted), "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "flag_z": report.settings.flag_z, "flag_public_z": report.settings.flag_public_z,
            "flagged": sum(1 for m in by_pair.values() if m.flagged),
            "flagged_not_planted": sum(1 for m in unplanted if m.flagged),
            "planted_flagged": sum(1 for p in planted if p in by_pair and by_pair[p].flagged),
            "highest_unplanted_pair_z": round(max((m.z for m in unplanted if not m.public), default=0.0), 2),
            "highest_unplanted_public_z": round(max((m.z for m in unplanted if m.public), default=0.0), 2),
            "lowest_planted_z_by_kind": {k: round(v, 2) for k, v in sorted(by_kind.items())},
            "groups": len(report.ranking.groups)}


def learner_files(course: Path, folder: Path) -> tuple[list[Path], Path, Path]:
    """Each learner's solution cells as one .py file, the handout as one file, micrograd as one file."""
    handout = load_handout(course / "source" / "workbook", course / "release" / "workbook")
    folders = {p.name: p / "workbook" for p in sorted((course / "submitted").iterdir())}
    s = Similarity()
    works, _ = read_class(folders, handout, ClassBounds(Limits().notebook_mb << 20, s.cells_per_notebook, s.cell_bytes, 10**9))
    (folder / "learners").mkdir(parents=True)
    files = []
    for w in works:
        path = folder / "learners" / f"{w.student}.py"
        path.write_text("\n\n".join(w.cells[e] for e in handout.exercises if e in w.cells))
        files.append(path)
    (folder / "handout").mkdir()
    boiler = folder / "handout" / "handout.py"
    boiler.write_text("\n\n".join(handout.boilerplate))
    (folder / "public").mkdir()
    mg = folder / "public" / "micrograd.py"
    mg.write_text(load_source("micrograd").text)
    return files, boiler, mg


def name_of(path: str) -> str:
    stem = Path(path).stem
    return similarity_class.MICROGRAD if stem == "micrograd" else stem


def plain_copydetect(files: list[Path], boiler: Path, mg: Path, planted: dict) -> dict:
    from copydetect import CopyDetector

    wall, cpu = time.perf_counter(), time.process_time()
    det = CopyDetector(test_dirs=[str(files[0].parent)], ref_dirs=[str(files[0].parent), str(mg.parent)],
                       boilerplate_dirs=[str(boiler.parent)], extensions=["py"], autoopen=False, silent=True, display_t=0.0)
    det.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    scores: dict[tuple[str, str], float] = {}
    for i, a in enumerate(det.test_files):
        for j, b in enumerate(det.ref_files):
            sim = det.similarity_matrix[i, j]
            if a != b and sim[0] >= 0:
                p = key(name_of(a), name_of(b))
                scores[p] = max(scores.get(p, 0.0), float(sim.mean()))
    ranked = sorted(scores, key=lambda p: -scores[p])
    return {**at_k(ranked, planted), "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2)}


def dolos(files: list[Path], boiler: Path, mg: Path, planted: dict, where: Path) -> dict:
    script = where / "similarity_bench_dolos.mjs"
    script.write_text(DOLOS_SCRIPT)
    wall = time.perf_counter()
    try:
        done = subprocess.run(["node", str(script), str(boiler), *map(str, files), str(mg)], capture_output=True, text=True,
                              timeout=3600)
    finally:
        script.unlink()
    wall = time.perf_counter() - wall
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    scores = {key(name_of(a), name_of(b)): s for a, b, s in map(json.loads, done.stdout.splitlines())}
    ranked = sorted(scores, key=lambda p: -scores[p])
    return {**at_k(ranked, planted), "seconds": round(wall, 2)}


def one_class(students: int, seed: int, dolos_dir: Path | None) -> dict:
    made = time.perf_counter()
    synthetic = similarity_class.make_class(students, seed)
    with tempfile.TemporaryDirectory(prefix="bench-similarity-") as tmp:
        course = synthetic.write(Path(tmp) / "course")
        made = time.perf_counter() - made
        notebooks = sum(1 for _ in (course / "submitted").glob("*/workbook/*.ipynb"))
        planted = synthetic.planted
        row = {"students": students, "notebooks": notebooks, "planted_pairs": len(planted),
               "planted_by_kind": {k: sum(1 for v in planted.values() if v == k) for k in sorted(set(planted.values()))},
               "seconds_to_make_class": round(made, 1), "ours": ours(course, planted)}
        if students <= PLAIN_LIMIT:
            files, boiler, mg = learner_files(course, Path(tmp) / "flat")
            row["copydetect_plain"] = plain_copydetect(files, boiler, mg, planted)
            if dolos_dir:
                row["dolos"] = dolos(files, boiler, mg, planted, dolos_dir)
        shutil.rmtree(course / "submitted")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dolos", type=Path, help="a folder with node_modules/@dodona/dolos-lib")
    add_option(parser, "bench_similarity")
    args = parser.parse_args()
    with recording("bench_similarity", args.results) as rec:
        for n in args.students:
            report_class(one_class(n, args.seed, args.dolos), rec)
        rec.note(f"seed {args.seed}; wall times on a shared machine are noisy, CPU seconds less so")
    return 0


def report_class(row: dict, rec: Results) -> None:
    """Print one class's row, the tools side by side, and record its figures (named by the class's size)."""
    n, o = row["students"], row["ours"]
    print(f"{n} learners ({row['notebooks']} notebooks, {row['planted_pairs']} planted pairs):")
    print(f"  this report:      P@k {o['precision_at_k']:.3f}  R@k {o['recall_at_k']:.3f}  {o['seconds']:7.1f} s "
          f"({o['cpu_seconds']:.1f} CPU s)  flagged {o['flagged']} ({o['flagged_not_planted']} not planted, "
          f"{o['planted_flagged']} of {row['planted_pairs']} planted)")
    print(f"    highest unplanted z: pair {o['highest_unplanted_pair_z']} (flag {o['flag_z']:g}), public engine "
          f"{o['highest_unplanted_public_z']} (flag {o['flag_public_z']:g}); lowest planted z by kind: "
          f"{o['lowest_planted_z_by_kind']}")
    for key, value, unit, what, digits in (
            ("notebooks", row["notebooks"], "notebooks", "notebooks handed in", 0),
            ("planted", row["planted_pairs"], "pairs", "planted pairs (k)", 0),
            ("precision", o["precision_at_k"], "", "this report: precision (= recall) of the planted pairs in its top k", 3),
            ("flagged", o["flagged"], "pairs", "this report: pairs standing out", 0),
            ("flagged_not_planted", o["flagged_not_planted"], "pairs", "this report: pairs standing out, not planted", 0),
            ("highest_unplanted_z", o["highest_unplanted_pair_z"], "", "the highest z of a pair not planted", 1),
            ("highest_unplanted_public_z", o["highest_unplanted_public_z"], "",
             "the highest z against micrograd of a learner who did not paste it", 1),
            ("lowest_planted_z", min(o["lowest_planted_z_by_kind"].values()), "", "the lowest z of a planted pair", 1),
            ("ours_s", o["seconds"], "s", "this report: read, compare, write the page (wall)", 1),
            ("ours_cpu_s", o["cpu_seconds"], "s", "this report: read, compare, write the page (CPU)", 1)):
        rec.figure(f"{key}_{n}", value, unit, f"{n} learners: {what}", digits)
    for kind, z in o["lowest_planted_z_by_kind"].items():
        rec.figure(f"lowest_planted_z_{kind}_{n}", z, "", f"{n} learners: the lowest z of a planted {kind} copy", 1)
    for name, label in (("copydetect_plain", "copydetect"), ("dolos", "dolos")):
        r = row.get(name)
        if r and "error" not in r:
            print(f"  {name + ':':17} P@k {r['precision_at_k']:.3f}  R@k {r['recall_at_k']:.3f}  {r['seconds']:7.1f} s "
                  f"({r['seconds'] / max(o['seconds'], 1e-9):.1f}x this report's time)")
            rec.figure(f"{label}_precision_{n}", r["precision_at_k"], "",
                       f"{n} learners: {label} out of the box, precision (= recall) in its top k", 3)
            rec.figure(f"{label}_s_{n}", r["seconds"], "s", f"{n} learners: {label} out of the box (wall)", 1)
            rec.figure(f"{label}_vs_ours_{n}", r["seconds"] / max(o["seconds"], 1e-9), "x",
                       f"{n} learners: {label}'s wall time / this report's", 1)
        elif r:
            print(f"  {name}: failed: {r['error']}")
            rec.ok = False


if __name__ == "__main__":
    sys.exit(main())
