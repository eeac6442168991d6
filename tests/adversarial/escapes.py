"""Submissions that try to get out of their worker: outlive grading (class 4), reach the grader's files (class 5),
leak secrets and hidden tests into feedback (class 6). Graded with the rest of corpus.py in one batch.

Every attack here is generic: it searches the machine for what it is after (no path is handed to it), and
whatever it finds it marks by creating a file named `pwned-*` beside it, so `test_grade_adversarial.py` can tell
afterwards that nothing outside the sandbox was reached. Inside the sandbox there is nothing to find. Every process
they start carries `corpus.TOKEN` (made once per run) in its command line, which the tests look for.
"""

from __future__ import annotations

from .corpus import FULL, TOKEN, Case, append, scores, solved

# Where an attacker looks: everything but the system's own folders (a walk of /usr takes longer than a cell may).
HUNT = '''import os, sys
SKIP = {"usr", "proc", "sys", "dev", "bin", "sbin", "lib", "lib32", "lib64", "etc", "boot", "run", "var"}
def hunt(wanted):
    found = []
    for top in [d for d in os.listdir("/") if d not in SKIP]:
        for root, dirs, files in os.walk("/" + top):
            dirs[:] = [d for d in dirs if d not in (".venv", "site-packages", "node_modules", ".git", ".pyenv")]
            found += [os.path.join(root, f) for f in files if f in wanted or any(w in root for w in wanted if "/" in w)]
            if len(found) > 200:
                return found
    return found
def mark(path, tag):
    try:
        open(os.path.join(os.path.dirname(path), "pwned-" + tag), "w").write("reached")
    except OSError:
        pass
'''

SURVIVOR = f"# {TOKEN}: this run's marker, in the command line\n" + HUNT + '''import time
time.sleep(2)  # the notebook is over by now: is anything of it still running?
for path in hunt({"gradebook.db", ".autograder-state.json", ".autograder-journal.jsonl"}):
    mark(path, "{tag}")
time.sleep({sleep})'''

SETSID_SURVIVOR = f'''import subprocess, sys
subprocess.Popen([sys.executable, "-c", {SURVIVOR.replace("{tag}", "setsid").replace("{sleep}", "313")!r}],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)'''

DOUBLE_FORK_SURVIVOR = f'''import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", {SURVIVOR.replace("{tag}", "doublefork").replace("{sleep}", "317")!r}])
    os._exit(0)'''

# The instructor's answers: the source notebook (path from a process's command line, or found on disk), run here.
STEALS_SOLUTIONS = HUNT + '''import json, re
paths = []
for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
    try:
        paths += open(f"/proc/{pid}/cmdline").read().split("\\0")
    except OSError:
        pass
paths += hunt({"02_values.ipynb", "gradebook.db"})
for path in paths:
    try:
        nb = json.load(open(path))
    except (OSError, ValueError, UnicodeDecodeError):
        continue
    for cell in nb.get("cells", []):
        text = "".join(cell.get("source", ""))
        if "### BEGIN SOLUTION" in text:
            exec(re.sub(r"### (BEGIN|END) SOLUTION", "", text), globals())
            mark(path, "solutions")'''

TAMPERS_COURSE = HUNT + '''for path in hunt({"gradebook.db", ".autograder-state.json", ".autograder-journal.jsonl", "02_values.ipynb",
                           "timestamp.txt"}):
    mark(path, "tamper")
    try:
        with open(path, "a") as f:
            f.write("\\n")  # a classmate's notebook, the gradebook, the resume state: damaged
    except OSError:
        pass
for folder in sys.path + [os.getcwd(), "/tmp"]:
    try:
        open(os.path.join(folder, "glob.py"), "w").write("raise SystemExit('planted by a classmate')")
    except OSError:
        pass'''

LEAKS_ENVIRONMENT = '''import os
print(dict(os.environ))
for pid in ("1", "self", str(os.getppid())):
    try:
        print(open(f"/proc/{pid}/environ").read())
    except OSError as exc:
        print("no environ of", pid, type(exc).__name__)'''

LEAKS_HIDDEN_TESTS = HUNT + '''import sqlite3
for path in hunt({"gradebook.db", "02_values.ipynb"}):
    try:
        if path.endswith(".db"):
            rows = sqlite3.connect(path).execute("select source from source_cell").fetchall()
            print(*[r[0] for r in rows if "HIDDEN" in r[0]])
        else:
            print(open(path).read())
        mark(path, "hidden")
    except Exception as exc:
        print(type(exc).__name__)'''

CASES: dict[str, Case] = {
    # class 4: nothing of a notebook runs once its grading ends
    "setsid_survivor": Case(lambda: append(solved(), "ex_02_value_class", SETSID_SURVIVOR), FULL, "", "subprocess.Popen"),
    "double_fork_survivor": Case(lambda: append(solved(), "ex_02_value_class", DOUBLE_FORK_SURVIVOR), FULL, "", "os.fork"),
    # class 5: the instructor's solutions, classmates, gradebook, state, modules planted for later workers
    "steals_solutions": Case(lambda: append(solved(only=["ex_02_value_class"]), "ex_02_value_class", STEALS_SOLUTIONS),
                             scores(1, 0, 0, 0), "", "os.listdir /"),
    "tampers_course": Case(lambda: append(solved(), "ex_02_value_class", TAMPERS_COURSE), FULL, "", "os.listdir /",
                           extra_files={"json.py": "raise SystemExit('planted beside the notebook')"}),
    # class 6: secrets and hidden tests printed into the feedback
    "leaks_environment": Case(lambda: append(solved(), "ex_02_value_class", LEAKS_ENVIRONMENT), FULL, "", "open /proc/1/environ"),
    "leaks_hidden_tests": Case(lambda: append(solved(), "ex_02_value_class", LEAKS_HIDDEN_TESTS), FULL, "", "os.listdir /"),
}
