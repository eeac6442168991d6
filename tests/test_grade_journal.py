"""The resume journal: HMAC'd records, appended only, a torn last record dropped, superseded records compacted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.grading.store.journal import JOURNAL_FILE, Journal
from autograder.grading.types import Code, Reason, Record

SECRET = b"s" * 32


def record(score: float = 1.0, fingerprint: str = "f") -> Record:
    return Record(fingerprint, score, 5.0, ["lying object"], [Reason(Code.NOTE, "cell 3 raised KeyError")], ["add.x"],
                  True, "ab" * 32)


def test_a_record_reads_back_as_it_was_written(tmp_path: Path) -> None:
    journal = Journal(tmp_path, SECRET)
    journal.append([("a/alice/nb", record())])
    journal.close()
    assert Journal(tmp_path, SECRET).get("a/alice/nb") == record()


def test_a_record_edited_without_the_secret_is_ignored_and_named(tmp_path: Path) -> None:
    journal = Journal(tmp_path, SECRET)
    journal.append([("a/alice/nb", record()), ("a/bob/nb", record(2.0, "g")), ("a/carol/nb", record())])
    journal.close()
    lines = [json.loads(ln) for ln in (tmp_path / JOURNAL_FILE).read_text().splitlines()]
    lines[0][1]["score"] = 5.0  # full marks
    lines[1][1]["fingerprint"] = "h"  # "unchanged": skip the regrade
    (tmp_path / JOURNAL_FILE).write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    reread = Journal(tmp_path, SECRET)
    assert reread.get("a/alice/nb") is None and reread.get("a/bob/nb") is None
    assert reread.rejected == {"a/alice/nb", "a/bob/nb"} and reread.get("a/carol/nb") == record()
    assert Journal(tmp_path, b"t" * 32).get("a/carol/nb") is None  # another course's secret


def test_the_last_record_of_a_key_wins(tmp_path: Path) -> None:
    journal = Journal(tmp_path, SECRET)
    journal.append([("a/alice/nb", record(1.0))])
    journal.append([("a/alice/nb", record(3.0))])
    journal.close()
    assert Journal(tmp_path, SECRET).get("a/alice/nb") == record(3.0)


def test_a_record_torn_at_any_byte_is_dropped_and_the_next_append_starts_on_its_own_line(tmp_path: Path) -> None:
    journal = Journal(tmp_path, SECRET)
    journal.append([("a/alice/nb", record(1.0))])
    journal.close()
    whole = (tmp_path / JOURNAL_FILE).read_bytes()
    journal = Journal(tmp_path, SECRET)
    journal.append([("a/bob/nb", record(2.0))])
    journal.close()
    both = (tmp_path / JOURNAL_FILE).read_bytes()
    for cut in range(len(whole) + 1, len(both)):  # a kill after each byte of bob's record (but its last)
        (tmp_path / JOURNAL_FILE).write_bytes(both[:cut])
        torn = Journal(tmp_path, SECRET)
        assert torn.get("a/alice/nb") == record(1.0) and torn.get("a/bob/nb") is None and not torn.rejected
        torn.append([("a/carol/nb", record(3.0))])
        torn.close()
        again = Journal(tmp_path, SECRET)
        assert (again.get("a/alice/nb"), again.get("a/bob/nb"), again.get("a/carol/nb")) == (record(1.0), None, record(3.0))
        assert not again.rejected


APPENDER = """
import sys
from pathlib import Path
from autograder.grading.store.journal import Journal
from autograder.grading.types import Code, Reason, Record
journal = Journal(Path(sys.argv[1]), b"s" * 32)
big = [Reason(Code.NOTE, "x" * 200_000)]
i = 0
while True:
    journal.append([(f"a/s{i}/nb", Record("f", float(i), 5.0, [], big, [], True, None))])
    i += 1
"""


@pytest.mark.parametrize("delay", [0.3, 0.55, 0.8])
def test_a_grader_killed_mid_append_leaves_a_journal_the_next_run_reads_and_extends(tmp_path: Path, delay: float) -> None:
    proc = subprocess.Popen([sys.executable, "-c", APPENDER, str(tmp_path)])
    path = tmp_path / JOURNAL_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (path.exists() and path.stat().st_size > 0):
        time.sleep(0.01)
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    journal = Journal(tmp_path, SECRET)
    found = sorted(int(k.split("/")[1][1:]) for k in journal.records)
    assert found and found == list(range(len(found)))  # every record before the kill, none half
    assert all(journal.get(f"a/s{i}/nb").score == float(i) for i in found) and not journal.rejected
    journal.append([("a/next/nb", record())])
    journal.close()
    assert Journal(tmp_path, SECRET).get("a/next/nb") == record() and len(Journal(tmp_path, SECRET).records) == len(found) + 1


def test_an_append_writes_only_its_own_records_however_long_the_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path, SECRET)
    journal.append([(f"a/s{i}/nb", record(float(i))) for i in range(20_000)])
    journal.close()
    path = tmp_path / JOURNAL_FILE
    before, inode = path.read_bytes(), path.stat().st_ino
    journal = Journal(tmp_path, SECRET)
    journal.append([("a/one/nb", record())])
    journal.close()
    after = path.read_bytes()
    assert path.stat().st_ino == inode and after.startswith(before)  # not rewritten: appended to
    assert after[len(before):].count(b"\n") == 1  # one line for one record, at 20,000 records as at the first


def test_a_journal_of_mostly_superseded_records_is_compacted_when_opened(tmp_path: Path) -> None:
    journal = Journal(tmp_path, SECRET)
    journal.append([("a/alice/nb", record(float(i))) for i in range(2000)])
    journal.close()
    journal = Journal(tmp_path, SECRET)
    journal.append([("a/bob/nb", record())])
    journal.close()
    assert (tmp_path / JOURNAL_FILE).read_text().count("\n") == 2
    assert Journal(tmp_path, SECRET).get("a/alice/nb") == record(1999.0)
    assert oct((tmp_path / JOURNAL_FILE).stat().st_mode & 0o777) == "0o600"
