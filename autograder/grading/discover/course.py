"""The course folder, as nbgrader's CourseDirectory configures it: where submissions, autograded notebooks and the
released notebooks are, who submitted, and the gradebook's URL (shown in errors without its password)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from ...lines import one_line
from ..types import Code, GradingError, Row, Status

UNNAMED = ("the submission folder's name is not UTF-8 text (or holds a control, format or line-breaking character): not "
           "graded; rename the folder")


@dataclass
class Course:
    """The course directory, as nbgrader's CourseDirectory configures it."""

    coursedir: CourseDirectory
    root: Path

    @classmethod
    def open(cls, config: Config, root: str | None, looked_at: str = "", gradebook: bool = True) -> Course:
        """The course the config and --course name; GradingError, touching nothing, when there is none there.

        `looked_at` says which config was read (the error names it): a grader run from the wrong folder must say
        where it looked, never create a gradebook there. Without `gradebook` (a command that reads only the course's
        notebooks, such as `similarity`) the folder need not hold one.
        """
        coursedir = CourseDirectory(config=config)
        if root:
            coursedir.root = str(Path(root).resolve())
        path = Path(coursedir.root).resolve()
        where = f"{'--course' if root else 'the config' if 'root' in config.get('CourseDirectory', {}) else 'the current folder'}"
        if not path.is_dir():
            raise GradingError(f"course folder {path} does not exist (from {where}; {looked_at or 'no config read'}): "
                               "pass --course DIR, or set $AUTOGRADER_COURSE_DIR")
        db = sqlite_file(coursedir.db_url) if gradebook else None
        if db is not None and not db.is_file():
            raise GradingError(f"no nbgrader course in {path} (from {where}; {looked_at or 'no config read'}): it has no "
                               f"gradebook {db}; run from the course's checkout, where its nbgrader_config.py is, or "
                               "pass --course DIR and --config FILE (nbgrader generate_assignment makes the gradebook)")
        return cls(coursedir, path)

    def submitted(self, student: str, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment))

    def autograded(self, student: str, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.autograded_directory, student, assignment))

    def feedback(self, student: str, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.feedback_directory, student, assignment))

    def release(self, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.release_directory, ".", assignment))

    def students(self, assignment: str, chosen: list[str] | None) -> list[str]:
        """Students with a submission folder for the assignment (or the chosen ones, each of which must have one:
        a mistyped id would otherwise become a student of the gradebook, with zeros)."""
        base = Path(self.coursedir.root) / self.coursedir.submitted_directory
        found = sorted(p.name for p in base.glob("*") if (p / assignment).is_dir()) if base.is_dir() else []
        if not chosen:
            return found
        unknown = [s for s in dict.fromkeys(chosen) if s not in found]
        if unknown:
            raise GradingError(f"no submission of {assignment!r} for {', '.join(unknown)} (looked for "
                               f"{base / unknown[0] / assignment}); check the id, or collect the submission first")
        return list(dict.fromkeys(chosen))


def sqlite_file(db_url: str) -> Path | None:
    """The file of an SQLite gradebook URL (sqlite:///path), None for another database (PostgreSQL, in memory)."""
    prefix = "sqlite:///"
    if not db_url.startswith(prefix) or db_url[len(prefix):] in ("", ":memory:"):
        return None
    return Path(db_url[len(prefix):].split("?")[0]).resolve()


def without_password(db_url: str, text: str | None = None) -> str:
    """`text` (by default the gradebook's URL itself) as an error message may show it: the URL's password as ***."""
    try:
        from sqlalchemy.engine import make_url

        url = make_url(db_url)
    except Exception:  # not a URL SQLAlchemy can parse: show no credentials part at all
        return (db_url.split("@", 1)[-1] if "@" in db_url else db_url) if text is None else text
    if text is None:
        return url.render_as_string(hide_password=True)
    return text.replace(url.password, "***") if url.password else text


def named(students: list[str]) -> list[str]:
    """The students whose id a gradebook, CSV or page can hold as it is (`one_line` leaves it unchanged)."""
    return [s for s in students if one_line(s) == s]


def unnamed_rows(students: list[str], max_scores: dict[str, float]) -> list[Row]:
    """Each notebook (name -> its points) of the students whose folder name cannot be an id: not graded, and why."""
    rows = []
    for student in students:
        if one_line(student) != student:
            for name, most in max_scores.items():
                row = Row(one_line(student), name, 0.0, most, Status.NOT_GRADED)
                row.add(Code.UNNAMED, UNNAMED)
                rows.append(row)
    return rows
