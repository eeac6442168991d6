"""Files besides notebooks, handed to the notebook's worker and copied into autograded/: bounded by their number and
their apparent size (a sparse file counts whole), with the same bounds both ways; what is past them is refused and
flagged, the rest go on."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

from nbgrader.coursedir import CourseDirectory

from autograder.grading.discover.submission import Submission
from autograder.grading.finish.other_files import copy_other_files
from autograder.grading.grade.sandbox import client
from autograder.settings import OTHER_FILES_BYTES, OTHER_FILES_COUNT


def _course(tmp_path: Path) -> tuple[CourseDirectory, Path]:
    coursedir = CourseDirectory(root=str(tmp_path))
    (tmp_path / "source" / "ps1").mkdir(parents=True)
    folder = tmp_path / "submitted" / "mallory" / "ps1"
    folder.mkdir(parents=True)
    (folder / "engine.ipynb").write_text("{}")
    return coursedir, folder


def _blocks(path: Path) -> int:
    return sum(os.lstat(p).st_blocks * 512 for p in path.rglob("*") if p.is_file())


def test_a_sparse_file_of_2_gib_is_refused_by_its_apparent_size_and_the_rest_copied(tmp_path: Path) -> None:
    coursedir, folder = _course(tmp_path)
    with open(folder / "big.bin", "wb") as f:
        f.truncate(2 * 2**30)  # 2 GiB apparent, no blocks: a plain copy writes it dense
    (folder / "data.csv").write_text("x\n1\n")
    assert _blocks(folder) < 2**20
    flags = copy_other_files(coursedir, "ps1", "mallory", Submission.scan(folder))
    dest = tmp_path / "autograded" / "mallory" / "ps1"
    assert (dest / "data.csv").read_text() == "x\n1\n" and not (dest / "big.bin").exists()
    assert _blocks(dest) < 2**20
    assert flags == [f"submission file big.bin refused: it is {2 * 2**30} bytes (its apparent size), more than the "
                     f"{OTHER_FILES_BYTES} bytes left of {OTHER_FILES_BYTES} for the files besides notebooks "
                     "(OTHER_FILES_BYTES): not used"]
    # the notebook's worker is handed the same files: the sparse one refused there too, with the same flag
    sub = Submission.scan(folder)
    assert set(sub.other_files()) == {"data.csv"} and sub.flags({"big.bin"}) == flags


def test_files_past_the_count_are_refused_and_the_first_ones_copied(tmp_path: Path) -> None:
    coursedir, folder = _course(tmp_path)
    for i in range(OTHER_FILES_COUNT + 3):
        (folder / f"f{i:05d}.txt").write_text(str(i))
    flags = copy_other_files(coursedir, "ps1", "mallory", Submission.scan(folder))
    copied = sorted(p.name for p in (tmp_path / "autograded" / "mallory" / "ps1").iterdir())
    assert copied == [f"f{i:05d}.txt" for i in range(OTHER_FILES_COUNT)]
    assert len(flags) == 3 and all("is beyond the first 1000 files besides notebooks" in f for f in flags)


def test_the_copy_and_the_worker_share_one_bound() -> None:
    assert inspect.signature(client.submission_files).parameters["limit"].default == OTHER_FILES_BYTES
