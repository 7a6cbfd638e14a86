"""Canonical ⇄ provider tool-call ids, per session (canonical-message-format §6.2).

Canonical ids (`tu_<ulid>`) are issued when a tool_use arrives from any provider. Outbound, each
target gets an id that meets its rules, derived deterministically from the canonical id so a
replayed history produces byte-identical requests (prompt caches survive). A tool_use keeps the
id its own provider issued when it goes back to that provider. The map is plain data
(`to_dict`/`from_dict`) so the session store can persist it.
"""

from __future__ import annotations

import hashlib
import logging
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from metis_core.ids import new_tool_use_id

if TYPE_CHECKING:
    from collections.abc import Iterable

IdStyle = Literal["anthropic", "openai", "alnum9", "gemini", "opaque"]

log = logging.getLogger("metis_core.adapters.tool_ids")

_ANTHROPIC_ID = r"[A-Za-z0-9_-]{1,64}"
"""Anthropic's rule for tool_use ids (^[a-zA-Z0-9_-]+$, at most 64); a regex keeps to_wire fast. Compiled
(by `re`, once) with the first id checked, not with the import."""

_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _alnum9(seed: str, attempt: int) -> str:
    digest = int.from_bytes(hashlib.sha256(f"{seed}#{attempt}".encode()).digest()[:8], "big")
    out = []
    for _ in range(9):
        digest, rem = divmod(digest, 62)
        out.append(_ALNUM[rem])
    return "".join(out)


def outbound_id(canonical_id: str, style: IdStyle, attempt: int = 0) -> str:
    """The provider-side id a target would get for a canonical id it never saw."""
    core = canonical_id.removeprefix("tu_")
    if style == "alnum9":
        return _alnum9(canonical_id, attempt)
    suffix = "" if attempt == 0 else f"_{attempt}"
    if style == "anthropic":  # ^[a-zA-Z0-9_-]+$, at most 64
        return f"toolu_{core}{suffix}"
    if style == "openai":  # at most 40 characters
        return f"call_{core}{suffix}"
    return f"{canonical_id}{suffix}"


class ToolIdMap:
    """Bidirectional map, namespaced by provider key (ids from two providers never mix)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self._to_provider: dict[str, dict[str, str]] = {}
        self._to_canonical: dict[str, dict[str, str]] = {}
        if data:  # a call's fresh map has none: no empty dict made to walk
            for namespace, pairs in data.items():
                for canonical_id, provider_id in pairs.items():
                    self._record(namespace, canonical_id, provider_id)

    def _record(self, namespace: str, canonical_id: str, provider_id: str) -> None:
        # read, not setdefault(namespace, {}): that made two throw-away dicts on every call of a known namespace
        to_provider = self._to_provider.get(namespace)
        if to_provider is None:
            to_provider = self._to_provider[namespace] = {}
        to_provider[canonical_id] = provider_id
        to_canonical = self._to_canonical.get(namespace)
        if to_canonical is None:
            to_canonical = self._to_canonical[namespace] = {}
        to_canonical[provider_id] = canonical_id

    def canonical_for(self, namespace: str, provider_id: str | None) -> str:
        """Canonical id for an id a provider just issued (a new `tu_` id the first time)."""
        if provider_id:
            known = self._to_canonical.get(namespace, {}).get(provider_id)
            if known is not None:
                return known
        canonical_id = new_tool_use_id()
        if provider_id:
            self._record(namespace, canonical_id, provider_id)
        return canonical_id

    def issue(self, namespace: str, provider_id: str | None) -> str:
        """A new canonical id for a call a provider just made in a response.

        Unlike `canonical_for` (which reads ids back from a request), a response's call is always
        new: if a misbehaving server reuses an id it issued before, the new call still gets its own
        canonical id, and the old binding keeps the provider id, so two calls never merge.
        """
        if not provider_id:
            return new_tool_use_id()
        to_canonical = self._to_canonical.get(namespace)
        if to_canonical is not None and provider_id in to_canonical:
            log.warning("%s reused tool call id %s; issuing a new canonical id", namespace, provider_id)
            return new_tool_use_id()
        canonical_id = new_tool_use_id()  # what canonical_for does for an id it has not seen, without asking again
        self._record(namespace, canonical_id, provider_id)
        return canonical_id

    def provider_for(self, namespace: str, canonical_id: str, style: IdStyle) -> str:
        """The id to send to a target: the one it issued, else a deterministic valid one."""
        # Every request maps every id of its history through here: the namespace dicts are read once.
        to_provider = self._to_provider.get(namespace)
        if to_provider is not None:
            known = to_provider.get(canonical_id)
            if known is not None and _fits(known, style):
                return known
        to_canonical = self._to_canonical.get(namespace)
        candidate = outbound_id(canonical_id, style)
        if to_canonical is not None:
            attempt = 0
            while to_canonical.get(candidate, canonical_id) != canonical_id:
                attempt += 1
                candidate = outbound_id(canonical_id, style, attempt)
        if to_provider is None:
            to_provider = self._to_provider[namespace] = {}
        if to_canonical is None:
            to_canonical = self._to_canonical[namespace] = {}
        to_provider[canonical_id] = candidate
        to_canonical[candidate] = canonical_id
        return candidate

    def bind_minted(self, namespace: str, used: UsedIds) -> bool:
        """Binds every (canonical, provider) pair of `used` at once when this namespace holds no ids yet and
        each is the id `provider_for` would mint for it (a request resuming a history on a fresh map); else
        binds nothing and answers False."""
        if self._to_provider.get(namespace) or self._to_canonical.get(namespace) or not used.minted:
            return False
        self._to_provider[namespace] = dict(used.sent)
        self._to_canonical[namespace] = dict(used.canonical)
        return True

    def provider_id(self, namespace: str, canonical_id: str) -> str | None:
        """The id a provider knows this call by, if it has seen it; never mints one (Gemini sends
        ids only for calls that arrived with one)."""
        return self._to_provider.get(namespace, {}).get(canonical_id)

    def lookup_canonical(self, namespace: str, provider_id: str) -> str | None:
        return self._to_canonical.get(namespace, {}).get(provider_id)

    def to_dict(self) -> dict[str, dict[str, str]]:
        return {ns: dict(pairs) for ns, pairs in self._to_provider.items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ToolIdMap:
        return cls(data)

    def __len__(self) -> int:
        return sum(len(pairs) for pairs in self._to_provider.values())


@lru_cache(maxsize=65_536)
def _fits(provider_id: str, style: IdStyle) -> bool:
    """Whether an id meets a target's rules (cached: every request re-checks every id of the history)."""
    if style == "alnum9":
        return len(provider_id) == 9 and provider_id.isalnum()
    if style == "openai":
        return len(provider_id) <= 40
    if style == "anthropic":
        return re.fullmatch(_ANTHROPIC_ID, provider_id) is not None
    return True


class UsedIds:
    """The (canonical, sent) tool-id pairs a held mapping used, each once, as a dict each way, and whether each
    sent id is the one `provider_for` mints for its canonical id on an empty map, each different (two minted
    alike: its collision rule decides). Made once per kept mapping, read by every request resuming it."""

    __slots__ = ("canonical", "minted", "pairs", "sent")

    def __init__(self, pairs: Iterable[tuple[str, str]], style: IdStyle) -> None:
        self.sent = dict(pairs)
        self.pairs = tuple(self.sent.items())
        self.canonical = {sent: canonical_id for canonical_id, sent in self.pairs}
        self.minted = len(self.canonical) == len(self.sent) and all(
            sent == outbound_id(canonical_id, style) for canonical_id, sent in self.pairs)


class RequestToolIds:
    """The ids one request sends, each looked up once: a call and its result share the same id."""

    __slots__ = ("_ids", "_namespace", "_style", "_tool_ids", "used")

    def __init__(self, tool_ids: ToolIdMap, namespace: str, style: IdStyle) -> None:
        self._tool_ids = tool_ids
        self._namespace = namespace
        self._style = style
        self._ids: dict[str, str] = {}
        self.used: list[tuple[str, str]] | None = None
        """When a list (`collect`): every (canonical, sent) pair asked for is appended (what a mapping used)."""

    def __call__(self, canonical_id: str) -> str:
        known = self._ids.get(canonical_id)
        if known is None:
            known = self._ids[canonical_id] = self._tool_ids.provider_for(self._namespace, canonical_id, self._style)
        if self.used is not None:
            self.used.append((canonical_id, known))
        return known

    def all_same(self, used: UsedIds) -> bool:
        """Whether each canonical id still goes out as it did (asking for it as a fresh mapping would)."""
        if not self._ids and self._tool_ids.bind_minted(self._namespace, used):
            self._ids.update(used.sent)
            return True
        return all(self(canonical_id) == sent for canonical_id, sent in used.pairs)

    def collect(self, held: UsedIds | None) -> None:
        """Notes every pair asked for from now on, after those of `held` (what a resumed mapping used)."""
        self.used = list(held.pairs) if held is not None else []

    def collected(self) -> UsedIds:
        """The pairs noted since `collect`, each once; stops noting."""
        used, self.used = UsedIds(self.used or (), self._style), None
        return used
