"""BedrockAdapter: the Converse and ConverseStream APIs behind the adapter contract.

Beyond the contract it signs each request (SigV4 by botocore, signing.py) unless a bearer Bedrock
API key is in use, and unframes ConverseStream's binary event stream (eventstream.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import (
    Adapter,
    AdapterOptions,
    ChunkDecoder,
    RequestContext,
    StreamTranslator,
    WireRequest,
)
from metis_core.adapters.bedrock.errors import PROVIDER, classify_error
from metis_core.adapters.bedrock.request import API, build_request
from metis_core.adapters.bedrock.response import parse_response
from metis_core.adapters.bedrock.stream import BedrockStreamTranslator
from metis_core.errors import ProviderError
from metis_core.messages import Message, ToolDefinition
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.adapters.bedrock.signing import SigV4Signer
    from metis_core.models.registry import ModelRegistry


class BedrockAdapter(Adapter):
    provider: ClassVar[str] = PROVIDER
    api: ClassVar[str] = API
    framing: ClassVar[Literal["sse", "ndjson", "eventstream"]] = "eventstream"
    default_base_url: ClassVar[str] = ""  # regional: https://bedrock-runtime.<region>.amazonaws.com

    def __init__(self, registry: ModelRegistry | None = None) -> None:
        super().__init__(registry)
        self._signer: SigV4Signer | None = None

    def to_wire(self, messages: list[Message], tools: list[ToolDefinition], options: AdapterOptions,
                tool_ids: ToolIdMap | None = None) -> WireRequest:
        return build_request(self, messages, tools, options, tool_ids)

    def from_wire_response(self, response: WireResponse, context: RequestContext) -> Message:
        return parse_response(response, context)

    def stream_translator(self, context: RequestContext) -> StreamTranslator:
        return BedrockStreamTranslator(context)

    def chunk_decoder(self) -> ChunkDecoder:
        from metis_core.adapters.bedrock.eventstream import EventStreamDecoder

        return EventStreamDecoder()

    def classify_error(self, response: WireResponse) -> ProviderError:
        return classify_error(response)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """A Bedrock API key (AWS_BEARER_TOKEN_BEDROCK) is a bearer token; without one, requests are signed."""
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def sign_request(self, method: str, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        if any(name.lower() == "authorization" for name in headers):
            if url.split("?", 1)[0].endswith("/converse-stream"):
                from metis_core.adapters.bedrock.signing import require_botocore

                require_botocore()  # the event stream is read by botocore: say so before the call is paid for
            return headers  # a bearer API key: nothing to sign
        if self._signer is None:
            from metis_core.adapters.bedrock.signing import SigV4Signer

            self._signer = SigV4Signer()
        return self._signer.sign(method, url, body, headers)
