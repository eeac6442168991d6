"""Build the workbook as a JupyterLite site (JupyterLab in the browser on Pyodide) into build/lite/.

    ./workbook lite                   Pyodide's full distribution from its CDN (matplotlib included): what to publish
    ./workbook lite --local-pyodide   Pyodide's core from npm, served by the site itself: offline use and the tests

Every build starts from nothing (a stale `.jupyterlite.doit.db` once dropped the local Pyodide URL without a word).
The project's wheel goes into a Pyodide lock file of the site's own, with `imports: ["autograder"]`, so the
notebooks' unchanged imports cell loads it: no install cell, no %pip.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from jupyterlite_pyodide_kernel.constants import PYODIDE_CDN_URL, PYODIDE_KERNEL_NPM_NAME, PYODIDE_KERNEL_PLUGIN_ID, PYODIDE_VERSION

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "lite"
LOCK_DIR = "static/pyodide-lock"  # the site's own lock and the wheels it names, relative to the site's root
# What the Pyodide kernel installs as it starts (see jupyterlite-pyodide-kernel's worker) and what the package imports.
KERNEL_NEEDS = ["micropip", "ipython", "jedi", "traitlets", "tqdm"]
NOT_IN_PYODIDE = ["comm"]  # the kernel needs it, Pyodide's lock does not carry it: from PyPI
SOURCES = ["pyproject.toml", "README.md", "autograder"]
# What jupyterlite-pyodide-kernel 0.8.6's kernel reports (its kernelspec, kernel_info's language_info): JupyterLab
# writes both into a notebook as its kernel connects, so copies that already hold them do not open as modified.
PYODIDE_KERNELSPEC = {"display_name": "Python (Pyodide)", "language": "python", "name": "python"}
PYODIDE_LANGUAGE_INFO = {"codemirror_mode": {"name": "python", "version": 3}, "file_extension": ".py",
                         "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                         "pygments_lexer": "ipython3", "version": "3.8"}


def die(message: str) -> None:
    print(f"workbook lite: {message}", file=sys.stderr)
    raise SystemExit(2)


def run(args: list[str | Path], **kw) -> None:
    done = subprocess.run([str(a) for a in args], text=True, capture_output=True, **kw)
    if done.returncode:
        die(f"{' '.join(map(str, args[:4]))} ... failed:\n{(done.stdout + done.stderr)[-2000:]}")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def project_wheel(work: Path) -> Path:
    """The project's wheel, built from a copy of the sources (the build never writes into the checkout)."""
    src = work / "src"
    src.mkdir(parents=True)
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(ROOT / name, src / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check", "-w", work / "dist", src])
    (wheel,) = (work / "dist").glob("*.whl")
    return wheel


def pyodide_core(work: Path) -> Path:
    """The npm package `pyodide` at the version jupyterlite-pyodide-kernel was built for (the core only)."""
    npm = shutil.which("npm")
    if not npm:
        die("npm is needed to fetch Pyodide's lock file and core (apt-get install npm)")
    run([npm, "pack", f"pyodide@{PYODIDE_VERSION}", "--silent", "--pack-destination", work], cwd=work)
    (tarball,) = work.glob("pyodide-*.tgz")
    with tarfile.open(tarball) as tar:
        tar.extractall(work / "npm", filter="data")
    return work / "npm" / "package"


def canonical(name: str) -> str:
    """A distribution name as the lock's keys spell it (PEP 503: `prompt_toolkit` is `prompt-toolkit`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(packages: dict[str, dict], roots: list[str]) -> list[str]:
    """The lock's names of `roots` and everything they depend on."""
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = canonical(todo.pop())
        if name in seen:
            continue
        if name not in packages:
            die(f"Pyodide's lock has no {name!r}")
        seen.append(name)
        todo.extend(packages[name].get("depends", []))
    return sorted(seen)


def pypi_wheels(specs: list[str], dest: Path) -> dict[str, Path]:
    """Pure-Python wheels from PyPI, by normalised name: those Pyodide's lock names, for a site with its core only."""
    dest.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--only-binary=:all:", "--python-version", "3.14", "--platform", "any", "-d", dest, *specs])
    found = {}
    for wheel in dest.glob("*.whl"):
        found[canonical(wheel.name.split("-")[0])] = wheel
    return found


def entry(name: str, wheel: Path, imports: list[str], depends: list[str]) -> dict:
    version = wheel.name.split("-")[1]
    return {"name": name, "version": version, "file_name": wheel.name, "install_dir": "site", "sha256": sha256(wheel),
            "package_type": "package", "imports": imports, "depends": depends, "unvendored_tests": False}


def site_lock(core: Path, wheel: Path, lock_dir: Path, local: bool) -> dict:
    """Pyodide's lock with the project's wheel added; every other file from the CDN, or (local) the site itself."""
    lock = json.loads((core / "pyodide-lock.json").read_text())
    packages = lock["packages"]
    lock_dir.mkdir(parents=True, exist_ok=True)
    comm = pypi_wheels(NOT_IN_PYODIDE, lock_dir)
    if local:
        names = closure(packages, KERNEL_NEEDS)
        binary = [n for n in names if not packages[n]["file_name"].endswith("-none-any.whl")]
        if binary:
            die(f"these packages the kernel needs have no pure-Python wheel: {binary}")
        got = pypi_wheels([f"{packages[n]['name']}=={packages[n]['version']}" for n in names], lock_dir)
        kept = {}
        for n in names:
            file = got.get(n) or die(f"pip found no wheel for {n}")
            kept[n] = {**packages[n], "file_name": file.name, "sha256": sha256(file)}  # PyPI's build, not Pyodide's
        packages = kept
    else:
        base = PYODIDE_CDN_URL.rstrip("/") + "/"
        packages = {n: {**p, "file_name": base + p["file_name"]} for n, p in packages.items()}
    for name, file in comm.items():
        packages[name] = entry(name, file, [name], [])
    shutil.copy(wheel, lock_dir / wheel.name)
    depends = ["tqdm", "traitlets"] + ([] if local else ["matplotlib"])
    packages["autograd-workbook"] = entry("autograd-workbook", lock_dir / wheel.name, ["autograder"], depends)
    lock["packages"] = packages
    return lock


def lite_config(local: bool) -> dict:
    kernel = {"loadPyodideOptions": {"lockFileURL": f"./{LOCK_DIR}/pyodide-lock.json"}}
    if local:
        kernel["disablePyPIFallback"] = True  # nothing may leave the machine
    return {"jupyter-lite-schema-version": 0, "jupyter-config-data": {
        "appName": "Autograd workbook",
        "litePluginSettings": {PYODIDE_KERNEL_PLUGIN_ID: kernel},
        "settingsOverrides": {
            "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
        },
    }}


def build(local: bool, out: Path = OUT) -> None:
    """The whole site, from nothing, into `out` (build/lite/)."""
    work = out.parent / f"{out.name}-work"
    for folder in (out, work):
        shutil.rmtree(folder, ignore_errors=True)
    work.mkdir(parents=True)
    lite_dir = work / "lite"
    lite_dir.mkdir()
    print("workbook lite: building the project's wheel", file=sys.stderr)
    wheel = project_wheel(work)
    print(f"workbook lite: fetching Pyodide {PYODIDE_VERSION}'s lock file (npm)", file=sys.stderr)
    core = pyodide_core(work)
    if local:
        shutil.copytree(core, lite_dir / "static" / "pyodide")  # the addon points pyodideUrl at it
    (lite_dir / "jupyter-lite.json").write_text(json.dumps(lite_config(local), indent=2))
    lock_files = work / "lock"
    lock = site_lock(core, wheel, lock_files, local)
    print("workbook lite: jupyter lite build", file=sys.stderr)
    contents = work / "contents"
    shutil.copytree(ROOT / "notebooks", contents, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for path in contents.rglob("*.ipynb"):  # the cells unchanged; the kernel the site has
        nb = json.loads(path.read_text(encoding="utf-8"))
        nb["metadata"].update(kernelspec=PYODIDE_KERNELSPEC, language_info=PYODIDE_LANGUAGE_INFO)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    # Only the Pyodide kernel's extension: nbgrader's and the other server extensions of this environment would call
    # a Jupyter server the site does not have.
    kernel_extension = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / PYODIDE_KERNEL_NPM_NAME
    run([Path(sys.executable).parent / "jupyter", "lite", "build", "--lite-dir", lite_dir, "--contents", contents,
         "--output-dir", out, "--ignore-sys-prefix", f"--LiteBuildConfig.federated_extensions={kernel_extension}"],
        cwd=lite_dir)
    shutil.copy(out / "lab" / "favicon.ico", out / "favicon.ico")  # where a browser asks for it first
    (out / LOCK_DIR).mkdir(parents=True)
    for file in lock_files.iterdir():
        shutil.copy(file, out / LOCK_DIR / file.name)
    (out / LOCK_DIR / "pyodide-lock.json").write_text(json.dumps(lock))
    config = json.loads((out / "jupyter-lite.json").read_text())["jupyter-config-data"]
    url = config["litePluginSettings"][PYODIDE_KERNEL_PLUGIN_ID].get("pyodideUrl")
    if local and url != "./static/pyodide/pyodide.mjs":
        die(f"the site's pyodideUrl is {url!r}, not the local Pyodide: the kernel would go to a CDN")
    shutil.rmtree(work)
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    where = "the site's own static/pyodide/ (offline)" if local else PYODIDE_CDN_URL
    print(f"workbook lite: built {shown}/ with Pyodide {PYODIDE_VERSION} from {where}; serve it with\n"
          f"    python3 -m http.server --bind 127.0.0.1 -d {shown}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="./workbook lite", description=__doc__.splitlines()[0])
    parser.add_argument("--local-pyodide", action="store_true",
                        help="serve Pyodide's core (npm) from the site itself: offline, without matplotlib")
    parser.add_argument("--output", type=Path, default=OUT, help="where the site goes (default: build/lite)")
    args = parser.parse_args(argv)
    build(args.local_pyodide, args.output.resolve())


if __name__ == "__main__":
    main()
