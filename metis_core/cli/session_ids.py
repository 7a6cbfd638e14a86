"""Ids as people type them: the whole id, a unique prefix (with or without `sess_`/`gk_`), or `latest`.

Every command that takes a session or gateway key id resolves it here, so the rules and the
messages are the same everywhere. An ambiguous prefix is refused with the candidates; nothing is guessed.
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


def pick_id(text: str, newest_first: list[str], *, id_prefix: str, what: str, hint: str) -> str:
    """The one id of `newest_first` that `text` names (whole, unique prefix, or `latest`).

    Ids are ULIDs after `id_prefix`, so a prefix typed without it is matched in upper case.
    An unknown id or an ambiguous prefix is a UsageProblem naming `hint` (where to see the ids)."""
    wanted = text.strip()
    if wanted == LATEST:
        if not newest_first:
            raise UsageProblem(f"no {what} yet; {hint}")
        return newest_first[0]
    if not wanted:
        raise UsageProblem(f"an empty {what} id; give an id, a prefix of one, or `latest`")
    if wanted in newest_first:
        return wanted
    prefix = wanted if wanted.startswith(id_prefix) else id_prefix + wanted.upper()
    found = [candidate for candidate in newest_first if candidate.startswith(prefix)]
    if len(found) == 1:
        return found[0]
    if found:
        shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
        raise UsageProblem(f"{wanted!r} is the start of several {what}s ({shown}); type more of the id")
    raise UsageProblem(f"no {what} {wanted}; {hint}")
