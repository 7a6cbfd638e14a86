"""The benchmark's own environment: create bench/.venv on first use and re-run the suite inside it.

The peers (LiteLLM, Pydantic AI, the official SDKs) are never metis-core's dependencies, so they
live in bench/.venv, built from bench/requirements.txt (+ requirements-nodeps.txt) with metis-core
installed editable. A stamp holding the requirements' hash triggers a rebuild when they change.
Also sets the environment every run needs: no telemetry, no remote price maps, a scratch METIS_HOME.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
VENV = BENCH_DIR / ".venv"
STAMP = VENV / ".requirements.sha256"
REQUIREMENTS = (BENCH_DIR / "requirements.txt", BENCH_DIR / "requirements-nodeps.txt")
STAMPED = (*REQUIREMENTS, REPO_ROOT / "pyproject.toml")
"""What the venv is built from: the peers' pins and metis-core's own dependencies (a new runtime
dependency, e.g. json-repair, must reach the venv the suite runs in)."""

RUN_ENVIRONMENT = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # LiteLLM would otherwise fetch its price map from the internet
    "LITELLM_TELEMETRY": "False",
    "LITELLM_LOG": "ERROR",
    "DO_NOT_TRACK": "1",
    "OTEL_SDK_DISABLED": "true",
    "PYTHONWARNINGS": "ignore::DeprecationWarning",
}


def venv_python() -> Path:
    return VENV / "bin" / "python"


def inside_bench_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def _requirements_hash() -> str:
    digest = hashlib.sha256()
    for path in STAMPED:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _run(command: list[str]) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, cwd=REPO_ROOT)


def ensure_venv() -> None:
    """Build bench/.venv unless it exists with the current requirements (about a minute the first time)."""
    wanted = _requirements_hash()
    if venv_python().exists() and STAMP.exists() and STAMP.read_text().strip() == wanted:
        return
    print("building bench/.venv for the benchmark's peers (first run only)...", flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", "--clear", str(VENV)])
    pip = [str(venv_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "-r", str(REQUIREMENTS[0])])
    _run([*pip, "--no-deps", "-r", str(REQUIREMENTS[1])])
    _run([*pip, "-e", f"{REPO_ROOT}[gateway,serve]"])
    STAMP.write_text(wanted + "\n")


def compile_bytecode() -> None:
    """Compile metis_core's bytecode, as `pip install` does for every package it installs.

    The peers were byte-compiled when pip installed them; metis-core is installed editable, and
    with PYTHONDONTWRITEBYTECODE=1 (set on these machines) every cold start would recompile its
    modules from source (~40 ms), a cost no installed copy of metis-core pays.
    """
    import compileall

    compileall.compile_dir(str(REPO_ROOT / "metis_core"), quiet=1)


def prepare_process_environment() -> None:
    """Settings inherited by every process of the run, including the cold-start interpreters."""
    for key, value in RUN_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    if "METIS_HOME" not in os.environ:
        os.environ["METIS_HOME"] = tempfile.mkdtemp(prefix="metis-bench-home-")
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY"):
        os.environ.pop(key, None)  # the suite passes its own dummy key; a real one must never be sent


def reexec_in_venv(argv: list[str]) -> None:
    """Replace this process with the suite running under bench/.venv's interpreter."""
    ensure_venv()
    prepare_process_environment()
    os.chdir(REPO_ROOT)
    python = str(venv_python())
    os.execv(python, [python, "-m", "bench", *argv])


def code_identity() -> dict[str, object]:
    """Which metis-core code a run measured: git's tree hash of metis_core/ and whether it had edits.

    Runs of the same tree can be read side by side (docs/performance.md, "Run to run"); a run made
    with uncommitted changes to metis_core/ is marked so it is never counted as that tree's.
    Without git (or outside a checkout) both are unknown.
    """
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        tree = git("rev-parse", "HEAD:metis_core")
        modified = bool(git("status", "--porcelain", "--", "metis_core"))
    except (OSError, subprocess.CalledProcessError):
        return {"metis_core_tree": None, "modified": None}
    return {"metis_core_tree": tree, "modified": modified}
