"""`python -m autograder similarity ASSIGNMENT`: read the class, compare, write the page and the CSV, print the top.

Nothing is written until everything is read and compared; the page and the CSV are each written whole or not at all,
in the course's reports/ folder beside the class report. The exit code is 0 whatever the ranking shows: it is
evidence for a person to read, not a failure.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..settings import Limits, Similarity
from .compare import Match, Ranking, rank
from .fingerprint import Fingerprint, all_hashes, fingerprint, only
from .handout import Exercise, Handout, SimilarityError
from .page import Evidence, Side, render
from .public import PublicSource, load_source
from .read import Answers, Bounds, printable, read_class

PRINTED = 20  # ranked lines printed at the end


@dataclass
class Report:
    """Everything the page, the CSV and the printed lines are made from."""

    assignment: str
    handout: Handout
    works: list[Answers]
    prints: list[dict[Exercise, Fingerprint]]
    public: dict[str, PublicSource]
    public_prints: dict[str, Fingerprint]
    ranking: Ranking
    settings: Similarity
    notes: list[str] = field(default_factory=list)

    def flagged(self) -> list[Match]:
        """The matches at or above the threshold, highest first."""
        return [m for m in self.ranking.matches if m.flagged]


def check_settings(s: Similarity) -> None:
    """SimilarityError for settings that cannot work (before anything is read)."""
    if not 1 <= s.noise <= s.guarantee:
        raise SimilarityError(f"Similarity.noise ({s.noise}) must be at least 1 and at most Similarity.guarantee ({s.guarantee})")
    if s.cell_bytes < 1 or s.cells_per_notebook < 1 or s.max_notebooks < 1:
        raise SimilarityError("Similarity.cell_bytes, cells_per_notebook and max_notebooks must be at least 1")
    if not 0 <= s.common_share <= 1 or s.common_floor < 2:
        raise SimilarityError("Similarity.common_share must be between 0 and 1, and common_floor at least 2")


def analyse(assignment: str, folders: dict[str, Path], handout: Handout, settings: Similarity, limits: Limits) -> Report:
    """Read every student's solution cells, fingerprint them without the boilerplate, and rank the pairs."""
    check_settings(settings)
    public = {src.name: src for src in (load_source(e) for e in settings.public_engines)}
    bounds = Bounds(limits.notebook_mb << 20, settings.cells_per_notebook, settings.cell_bytes, settings.max_notebooks)
    works, notes = read_class(folders, handout, bounds)
    if len(works) < 2:
        raise SimilarityError(f"{len(works)} readable submission(s) of {assignment!r}: a comparison needs two")
    k, window = settings.noise, settings.guarantee - settings.noise + 1
    boilerplate = all_hashes(handout.boilerplate, k)
    cache: dict[str, Fingerprint] = {}  # identical cells (an untouched stub, a copied answer) are fingerprinted once

    def fp(code: str) -> Fingerprint:
        if code not in cache:
            cache[code] = fingerprint(code, k, window, boilerplate)
        return cache[code]

    prints = [{e: fp(code) for e, code in w.cells.items()} for w in works]
    public_prints = {name: fingerprint(src.text, k, window, boilerplate) for name, src in public.items()}
    ranking = rank([w.student for w in works], prints, handout.exercises, public_prints, settings.common_share,
                   settings.common_floor, settings.flag_z, settings.flag_public_z)
    if len(works) < 20:
        notes.append(f"only {len(works)} students: a class's baseline needs more pairs than this to mean much")
    return Report(assignment, handout, works, prints, public, public_prints, ranking, settings, notes)


def evidence(report: Report, match: Match) -> list[Evidence]:
    """The matched regions of one pair, exercise by exercise (only the fingerprints that count as evidence)."""
    from copydetect import compare_files

    index = {w.student: i for i, w in enumerate(report.works)}
    left = report.prints[index[match.a]]
    out = []
    for e in match.exercises:
        if match.public:
            fb = report.public_prints[match.b]
            keep = left[e].hashes & fb.hashes
            title_b = match.b
        else:
            fb = report.prints[index[match.b]][e]
            keep = {h for h in left[e].hashes & fb.hashes if report.ranking.evidence(e, h)}
            title_b = f"{match.b}: {e}"
        _, _, (sa, sb) = compare_files(only(left[e], keep), only(fb, keep))
        out.append(Evidence(str(e), Side(f"{match.a}: {e}", left[e].raw_code, sa), Side(title_b, fb.raw_code, sb)))
    return out


def _row(m: Match) -> dict:
    return {"a": m.a, "b": m.b, "z": m.z, "threshold": m.threshold, "score": m.score, "exercises": [str(e) for e in m.exercises],
            "flag": m.flagged}


def page(report: Report) -> str:
    """The HTML page."""
    s, r = report.settings, report.ranking
    summary = [("students compared", str(len(report.works))),
               ("exercises (solution cells)", str(len(report.handout.exercises))),
               ("public engines", ", ".join(report.public) or "none"),
               ("class baseline (pairs of students)", f"median score {r.baseline.median:.2f}, robust spread "
                f"{r.baseline.spread:.2f}, over {r.baseline.pairs} pairs"),
               *((f"baseline against {name}", f"median {b.median:.2f}, robust spread {b.spread:.2f}, over {b.pairs} "
                  "students") for name, b in r.public_baselines.items()),
               ("thresholds", f"z >= {s.flag_z:g} for two students (Similarity.flag_z), z >= {s.flag_public_z:g} for a "
                "student and a public engine (Similarity.flag_public_z)"),
               ("what counts", f"matches of at least {s.noise} normalised characters (Similarity.noise), in at most "
                f"{r.common} students (Similarity.common_share, common_floor)")]
    table = [_row(m) for m in report.ranking.matches[: max(s.show, 0)]]
    shown = [(_row(m), evidence(report, m)) for m in report.flagged()[: max(s.show, 0)]]
    return render(report.assignment, summary, report.notes, table, r.groups, shown)


def csv_text(report: Report) -> str:
    """Every flagged match (and the ten next below, for context): z, score, student, with, exercises."""
    from ..grading.outputs.text import csv_text as safe

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["z", "threshold", "score", "student", "with", "public_engine", "exercises"])
    shown = len(report.flagged()) + 10
    for m in report.ranking.matches[:shown]:
        w.writerow([f"{m.z:.2f}", f"{m.threshold:g}", f"{m.score:.2f}", *safe([m.a, m.b]), "yes" if m.public else "no",
                    *safe([" ".join(str(e) for e in m.exercises)])])
    return buf.getvalue()


def lines(report: Report) -> list[str]:
    """What the command prints: the run in one line, the top of the ranking, the groups; one line each."""
    r, s = report.ranking, report.settings
    flagged = report.flagged()
    out = [f"similarity of {printable(report.assignment)}: {len(report.works)} students, "
           f"{len(report.handout.exercises)} solution cells each, public engines: {', '.join(report.public) or 'none'}",
           f"class baseline: median pair score {r.baseline.median:.2f}, robust spread {r.baseline.spread:.2f}; "
           f"{len(flagged)} stand out (z >= {s.flag_z:g} for two students, >= {s.flag_public_z:g} against a public engine)"]
    out += [f"note: {printable(n)}" for n in report.notes[:10]]
    if len(report.notes) > 10:
        out.append(f"note: {len(report.notes) - 10} more notes on the page")
    for m in flagged[:PRINTED]:
        out.append(f"z {m.z:6.1f}  {printable(m.a)} ~ {printable(m.b)}  ({len(m.exercises)} exercises)")
    if len(flagged) > PRINTED:
        out.append(f"... {len(flagged) - PRINTED} more on the page")
    out += [f"group of {len(g)}: {', '.join(printable(x) for x in g)}" for g in r.groups]
    out.append("evidence to read, not a verdict")
    return out


def write(root: Path, report: Report) -> list[Path]:
    """reports/<assignment>-similarity.html and .csv, each whole or not at all; their paths."""
    from ..grading.store.files import REPORT_DIR, atomic_write

    html_text, csv_body = page(report), csv_text(report)  # both made before either is written
    folder = root / REPORT_DIR
    paths = [folder / f"{report.assignment}-similarity.html", folder / f"{report.assignment}-similarity.csv"]
    for path, text in zip(paths, (html_text, csv_body)):
        atomic_write(path, text.encode("utf-8"), durable=False)
    return paths


def run(assignment: str, config, course: str | None) -> tuple[Report, list[Path]]:
    """The command: the course (as `grade` finds it), the handout, the class; the page and CSV written."""
    from ..grading.discover.course import Course
    from .handout import load_handout

    if not assignment or "/" in assignment or assignment in (".", "..") or printable(assignment) != assignment:
        raise SimilarityError(f"{assignment!r} is not an assignment name")
    c = Course.open(config, course, gradebook=False)  # it reads the notebooks, never the gradebook
    handout = load_handout(Path(c.coursedir.format_path(c.coursedir.source_directory, ".", assignment)), c.release(assignment))
    students = c.students(assignment, None)
    if not students:
        raise SimilarityError(f"no submissions of {assignment!r} in {c.root / c.coursedir.submitted_directory}")
    report = analyse(assignment, {s: c.submitted(s, assignment) for s in students}, handout,
                     Similarity(config=config), Limits(config=config))
    return report, write(c.root, report)


def main_lines(assignment: str, config, course: str | None) -> Sequence[str]:
    """Run and return the lines to print (the CLI's part)."""
    report, paths = run(assignment, config, course)
    return [*lines(report), *(f"wrote {p}" for p in paths)]
