"""Session ids as people type them: the whole id, a unique prefix (with or without `sess_`), or `latest`.

Every command that takes a session id resolves it here, so the rules and the messages are the
same everywhere. An ambiguous prefix is refused with the candidates; nothing is guessed.
"""

from __future__ import annotations

from metis_core.cli.exit_codes import UsageProblem
from metis_core.errors import SessionNotFoundError
from metis_core.store.sessions import SessionStore

LATEST = "latest"
ID_PREFIX = "sess_"


def resolve_session_id(store: SessionStore, text: str) -> str:
    """The stored session id `text` names; SessionNotFoundError or UsageProblem (ambiguous) otherwise."""
    wanted = text.strip()
    if wanted == LATEST:
        newest = store.list_sessions(1)
        if not newest:
            raise SessionNotFoundError("no sessions stored yet; `metis chat` or `metis run` starts one")
        return newest[0].id
    if not wanted:
        raise UsageProblem("an empty session id; give an id, a prefix of one, or `latest`")
    if store.has_session(wanted):
        return wanted
    prefix = wanted if wanted.startswith(ID_PREFIX) else ID_PREFIX + wanted.upper()
    found = store.session_ids_starting_with(prefix, limit=6)
    if len(found) == 1:
        return found[0]
    if found:
        shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
        raise UsageProblem(f"{wanted!r} is the start of several sessions ({shown}); type more of the id")
    raise SessionNotFoundError(f"no session {wanted}; `metis sessions list` shows the stored ones")
