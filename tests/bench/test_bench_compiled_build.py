"""bench/compiled_build.py: which build a server's processes run, read from their memory maps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.compiled_build import loaded_build  # noqa: E402


def test_a_process_without_the_compiled_library_mapped_runs_pure_python() -> None:
    assert loaded_build([os.getpid()]) == "pure Python"  # make test runs the editable (pure) install


def test_the_workers_of_a_server_are_read_not_its_supervisor() -> None:
    """A worker (a child of one of the pids) decides; the supervisor, which imports no metis_core, does not."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert loaded_build([os.getpid(), child.pid]) == "pure Python"
    finally:
        child.kill()
        child.wait()
