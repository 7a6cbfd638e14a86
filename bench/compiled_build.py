"""The gateway's two builds for the benchmark: this tree's source (pure Python) or its compiled wheel.

    compiled_site()  -> a folder holding this tree's compiled metis_core, to put on a server's PYTHONPATH
    loaded_build(pids) -> which build those processes actually run, read from their memory maps

The compiled wheel is built from this very tree (setup.py, METIS_COMPILE=1) and installed with
--no-deps into bench/.compiled/<hash of the sources>/, beside whatever venv runs the benchmark (its
dependencies come from there): a source edit gets a new build, never a stale one. Building needs
mypy (the dev extra): this interpreter's if it has it, else the repo's .venv. ~1.5-2 min the first
time for a tree. A server started with that folder on PYTHONPATH, and neither the repo root on it
nor as its working directory, imports the compiled modules, as a user who installed the wheel does.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "bench" / ".compiled"
BUILDS = ("compiled", "pure")


def _sources_hash() -> str:
    digest = hashlib.sha256()
    for path in [REPO / "setup.py", REPO / "pyproject.toml", *sorted((REPO / "metis_core").rglob("*.py"))]:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _builder() -> str:
    """An interpreter that can run mypyc with metis-core's dependencies (the dev venv)."""
    for python in (sys.executable, str(REPO / ".venv" / "bin" / "python")):
        probe = [python, "-c", "import mypyc.build, setuptools, wheel, pydantic"]
        if Path(python).exists() and subprocess.run(probe, capture_output=True).returncode == 0:
            return python
    raise SystemExit("building the compiled gateway needs mypy, setuptools and wheel: run `make .venv/.installed-dev` "
                     "(the dev venv has them), or pass --build pure")


def compiled_site() -> Path:
    """This tree's compiled metis_core, built and installed on first use (cached by the sources' hash)."""
    site = CACHE / _sources_hash()
    if (site / ".complete").exists():
        return site
    print(f"building this tree's compiled wheel into {site} (first use, ~2 min)...", flush=True)
    shutil.rmtree(CACHE, ignore_errors=True)  # one tree at a time: earlier builds are stale
    with tempfile.TemporaryDirectory(prefix="metis-wheel-") as out:
        subprocess.run([_builder(), "-m", "pip", "wheel", "--quiet", "--no-build-isolation", "--no-deps",
                        "-w", out, str(REPO)], cwd=REPO, check=True, env=_compile_env())
        wheel = next(Path(out).glob("metis_core-*-cp*.whl"))
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                        "--target", str(site), str(wheel)], check=True)
    shutil.rmtree(REPO / "build", ignore_errors=True)
    (site / ".complete").touch()
    return site


def _compile_env() -> dict[str, str]:
    return {**os.environ, "METIS_COMPILE": "1"}


def loaded_build(pids: list[int]) -> str:
    """"compiled (mypyc)" if every worker of a server (the processes whose parent is one of `pids`,
    else all of them) has metis_core's compiled modules mapped, "pure Python" if none has."""
    parents = {pid: int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) for pid in pids}
    workers = [pid for pid, parent in parents.items() if parent in parents] or pids
    compiled = ["metis_core__mypyc" in Path(f"/proc/{pid}/maps").read_text() for pid in workers]
    if all(compiled):
        return "compiled (mypyc)"
    if not any(compiled):
        return "pure Python"
    return "mixed"
