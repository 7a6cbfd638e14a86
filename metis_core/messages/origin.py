"""`BlockOrigin`: the provider, API and model that issued an opaque token or payload.

Signatures replay only to the exact origin; hosted-tool payloads, compaction and citations
replay to the same provider and API (any model of it).
"""

from pydantic import BaseModel, ConfigDict


class BlockOrigin(BaseModel):
    """Who issued an opaque token: a signature replays only to the same provider, API and model."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    provider: str
    api: str
    model: str

    def matches(self, provider: str, api: str, model: str) -> bool:
        return self.provider == provider and self.api == api and self.model == model

    def same_api(self, provider: str, api: str) -> bool:
        return self.provider == provider and self.api == api
