"""Cassettes: calls recorded to a JSON-lines file and served back through the real adapters.

Sits between transport and adapters: it knows canonical messages (to key a call) and bytes (to
record and serve them), never an adapter, the agent or the store. The format is documented in
docs/record-replay.md; the pytest plugin lives in `metis_core.testing`.
"""

from metis_core.cassettes.canonical import canonical_request, request_differences, request_key
from metis_core.cassettes.cassette import Cassette, CassetteMode
from metis_core.cassettes.format import CassetteEntry, RecordedResponse, read_cassette
from metis_core.cassettes.scrub import Scrubber, find_secrets

__all__ = [
    "Cassette",
    "CassetteEntry",
    "CassetteMode",
    "RecordedResponse",
    "Scrubber",
    "canonical_request",
    "find_secrets",
    "read_cassette",
    "request_differences",
    "request_key",
]
