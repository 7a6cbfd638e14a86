"""Running uvicorn for `metis serve` and `metis gateway serve`: the extra checked first, the banner
printed once the socket listens (not before), and a bind failure as a named error.

The servers themselves are metis_core.server and metis_core.gateway; nothing here handles requests.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from metis_core.errors import ConfigError, ServeError

EXTRA_MODULES = {"serve": ("starlette", "uvicorn", "websockets"), "gateway": ("starlette", "uvicorn")}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_extra(extra: str, command: str) -> None:
    """ConfigError (exit 3) naming `pip install 'metis-core[EXTRA]'` when a module of the extra is missing."""
    missing = [module for module in EXTRA_MODULES[extra] if not _installed(module)]
    if missing:
        raise ConfigError(f"`{command}` needs the {extra} extra ({', '.join(missing)} not installed): "
                          f"pip install 'metis-core[{extra}]'")


def run_until_stopped(app: Any, *, host: str, port: int, announce: Callable[[], None], **settings: Any) -> None:
    """uvicorn.run, except that `announce` runs once the port listens; a port that cannot be bound is
    a ServeError naming it. `settings` are uvicorn.Config's (workers, factory, loop, http, ...)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(app, host=host, port=port, **settings)
    if config.workers > 1:  # the parent binds the socket its workers share
        try:
            sock = config.bind_socket()
        except SystemExit:
            raise ServeError(f"cannot listen on {host}:{port}; is another server using the port?") from None
        announce()
        Multiprocess(config, sockets=[sock]).run()
        return

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                announce()

    config.load_app()
    server = AnnouncingServer(config)
    try:
        server.run()
    except SystemExit:
        pass  # uvicorn exits when it cannot bind; said below
    except KeyboardInterrupt:
        return
    if not server.started:
        raise ServeError(f"cannot listen on {host}:{port}; is another server using the port?")
