"""A fresh clone: the README's two commands, as written, in the clone's own new virtual environment."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import urllib.request
from pathlib import Path

import pytest
from lab_server import free_port, stop, wait_until_served

ROOT = Path(__file__).resolve().parent.parent
# Set for the inner `./workbook test` runs: even a selection that includes this module skips it there (see conftest.py).
INNER = "WORKBOOK_FRESH_CLONE_INNER"

pytestmark = [pytest.mark.fresh_clone, pytest.mark.slow]


def clean_env() -> dict[str, str]:
    """The caller's environment minus every trace of this checkout's virtual environment."""
    ours = str(Path(os.environ.get("VIRTUAL_ENV") or ROOT / ".venv").resolve())
    env = {k: v for k, v in os.environ.items()
           if k not in {"VIRTUAL_ENV", "WORKBOOK_VENV", "PYTHONPATH", "PYTHONHOME", "NBGRADER_EXECUTION"}
           and not k.startswith(("JUPYTER", "PYTEST"))}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not str(Path(p).resolve()).startswith(ours)]
    env["PATH"] = os.pathsep.join(path)
    return env


def readme_commands(clone: Path) -> list[str]:
    """The lines of the bash block under "The two commands" that run ./workbook: what a user types, and what this test runs."""
    text = (clone / "README.md").read_text()
    section = text.split("\n## The two commands\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [m.group(1) for m in re.finditer(r"^(\./workbook \w+)", block, re.M)]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`git clone` of this repository's committed HEAD into an empty folder."""
    if not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a git checkout: nothing to clone")
    target = tmp_path_factory.mktemp("fresh") / "autograd-workbook"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True, timeout=120)
    assert not (target / ".venv").exists()
    assert readme_commands(target) == ["./workbook lab", "./workbook test"], "the README's two commands changed"
    return target


def tail(log: Path, n: int = 4000) -> str:
    return log.read_text(errors="replace")[-n:]


def quick_start_notebooks(clone: Path) -> set[str]:
    """Notebook paths the learner guide tells a learner to open, relative to the lab's root (notebooks/)."""
    return set(re.findall(r"(?:notebooks/)?(workbook/\d\d_\w+\.ipynb)", (clone / "docs" / "learner" / "index.md").read_text()))


def test_workbook_lab_serves_the_notebooks_from_a_fresh_clone(clone: Path, tmp_path: Path):
    if not (clone / "notebooks").is_dir():
        pytest.skip("notebooks/ is not committed yet (the workbook, issue 3): ./workbook lab has nothing to open")
    port, token = free_port(), secrets.token_hex(16)
    log = tmp_path / "lab.log"
    env = clean_env() | {"JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    with log.open("w") as out:
        # `./workbook lab` as the README has it, plus jupyter options so that it neither opens a browser nor blocks.
        proc = subprocess.Popen(
            ["./workbook", "lab", "--no-browser", f"--port={port}", "--ServerApp.port_retries=0",
             "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"],
            cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        # the first run creates .venv and installs the package
        wait_until_served(f"{base}/lab?token={token}", proc, log, timeout=600, what="./workbook lab")
        with urllib.request.urlopen(f"{base}/lab?token={token}", timeout=10) as r:
            page = r.read().decode()
        assert "JupyterLab" in page
        with urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=10) as r:
            root = {item["name"] for item in json.load(r)["content"]}
        # The server's root is the learner notebooks folder, as the README's quick start says.
        expected = {p.name for p in (clone / "notebooks").iterdir()}
        assert root == expected
        for path in quick_start_notebooks(clone):  # every notebook the README names is really there
            with urllib.request.urlopen(f"{base}/api/contents/{path}?content=0&token={token}", timeout=10) as r:
                assert json.load(r)["type"] == "notebook", path
        with urllib.request.urlopen(f"{base}/api/kernelspecs?token={token}", timeout=10) as r:
            assert "python3" in json.load(r)["kernelspecs"]
    finally:
        stop(proc)
    assert (clone / ".venv" / "bin" / "python").exists()


def workbook_test(clone: Path, log: Path, *pytest_args: str) -> str:
    """`./workbook test PYTEST_ARGS` in the clone; its output, after asserting that it passed some tests."""
    with log.open("w") as out:
        done = subprocess.run(["./workbook", "test", *pytest_args], cwd=clone, env=clean_env() | {INNER: "1"},
                              stdout=out, stderr=subprocess.STDOUT, timeout=1200)
    text = log.read_text(errors="replace")
    assert done.returncode == 0, f"./workbook test {' '.join(pytest_args)} failed in the fresh clone (exit {done.returncode}):\n{tail(log)}"
    summary = text.strip().splitlines()[-1]
    passed_cleanly = re.search(r"\d+ passed", summary) and not re.search(r"\d+ (failed|error)", summary)
    assert passed_cleanly, f"the inner run did not pass cleanly: {summary}"
    print(f"inner ./workbook test {' '.join(pytest_args)}: {summary}")
    return text


def test_workbook_test_passes_twice_in_a_fresh_clone(clone: Path, tmp_path: Path):
    # The README's test command on the tests of set-up itself (extra arguments go to pytest, as the README says): the
    # outer suite runs every test already (and CI runs it from a fresh clone), so the inner runs prove set-up, not
    # the tests again.
    first = workbook_test(clone, tmp_path / "first.log", "tests/test_smoke.py", "tests/test_packaging.py", "-m", "not slow")
    assert "workbook: installing .[dev]" in first  # this run set the clone's venv up (with the dev extra)
    # Again, on one file: set-up is skipped (the stamp matches) and the tests still pass.
    second = workbook_test(clone, tmp_path / "second.log", "tests/test_smoke.py")
    assert "workbook: installing" not in second and "creating the virtual environment" not in second, second[:2000]


def test_workbook_docs_builds_the_site_in_a_fresh_clone_with_one_command(clone: Path, tmp_path: Path):
    """`./workbook docs` after the clone's `./workbook test` set-up (the dev extra holds the docs extra): one command,
    no set-up again, the site in build/docs/, warnings as errors."""
    workbook_test(clone, tmp_path / "setup.log", "tests/test_smoke.py")
    log = tmp_path / "docs.log"
    with log.open("w") as out:
        done = subprocess.run(["./workbook", "docs"], cwd=clone, env=clean_env(), stdout=out, stderr=subprocess.STDOUT,
                              timeout=1200)
    assert done.returncode == 0, f"./workbook docs failed in the fresh clone:\n{tail(log)}"
    assert "workbook: installing" not in log.read_text()
    for page in ("index.html", "learner/index.html", "instructor/one-machine.html", "configuration.html"):
        assert (clone / "build" / "docs" / page).is_file(), page
