"""A throwaway PostgreSQL server for the store tests: `initdb` + `pg_ctl` on a temp dir, a free port.

The binaries come from the Debian `postgresql` package (/usr/lib/postgresql/*/bin). initdb refuses
to run as root, so as root the server runs as the `postgres` user in a directory it owns. Each
test gets its own fresh database (`fresh_database_url`). Without the binaries the tests skip,
except under CI (CI=true), where they fail.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

INSTALL_HINT = (
    "PostgreSQL binaries not found (initdb, pg_ctl); install them with "
    "`apt-get install -y postgresql` (Debian/Ubuntu) to run the PostgreSQL store tests"
)


def find_bin_dir() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.insert(0, str(Path(on_path).parent))
    for folder in candidates:
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"under CI the PostgreSQL tests must run: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="metis-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._counter = 0

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run(str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "metis", "--auth=trust",
                  "-E", "UTF8", "--no-sync")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-o", options, "-l",
                  str(self.root / "server.log"), "-w", "-t", "60", "start")

    def stop(self) -> None:
        try:
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://metis@127.0.0.1:{self.port}/{database}"

    def fresh_database_url(self) -> str:
        import psycopg

        self._counter += 1
        name = f"t{os.getpid()}_{self._counter}_{int(time.time() * 1000) % 100000}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE template0")
        return self.url(name)


_server: PostgresServer | None = None


def shared_server() -> PostgresServer:
    """The one server of this test process, started on first use (stopped by `stop_shared_server`)."""
    global _server
    if _server is None:
        bin_dir = find_bin_dir()
        if bin_dir is None:
            skip_or_fail(INSTALL_HINT)
            raise AssertionError("unreachable")
        try:
            import psycopg  # noqa: F401
        except ImportError:
            skip_or_fail("psycopg is not installed: pip install -e '.[postgres]'")
        server = PostgresServer(bin_dir)
        server.start()
        _server = server
    return _server


def stop_shared_server() -> None:
    global _server
    if _server is not None:
        _server.stop()
        _server = None
