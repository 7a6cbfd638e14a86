"""ModelClient: one call to one model — check it fits, build the request, send it, parse the answer.

Resolves the adapter from the model id's provider, checks the history fits the model's declared
capabilities before any HTTP call, builds the wire request, adds the API key to the headers at
send time only, retries transient failures, and parses the response or translates the stream.
It does not route, fall back to other models or persist anything, and it does not resolve
`file_ref` images (the agent reads the workspace and inlines them before calling). With a
cassette (`record=` / `replay=`) every call goes through the cassette transport instead.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack, overload

from pydantic import BaseModel, SecretStr

from metis_core.adapters._common.repair import RepairedHistory
from metis_core.adapters._common.token_estimate import survey_history, surveyed_history
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext, WireRequest
from metis_core.adapters.parse_guard import classify_checked, parse_response_checked
from metis_core.adapters.registry import named_adapter_class
from metis_core.errors import ProviderError
from metis_core.messages import Message, RoutingDecisionRecord
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.fit import HistoryShape, check_fits
from metis_core.models.model_id import parse_model_id
from metis_core.secret_scrub import remember_secret
from metis_core.transport.http import AsyncHttp, HttpTransport, TimeoutArg
from metis_core.transport.retry import RetryPolicy
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    import httpx

    from metis_core.cassettes.cassette import Cassette
    from metis_core.cassettes.transport import CassetteCall, CassetteTransport
    from metis_core.config import MetisConfig
    from metis_core.messages import StreamEvent, ToolDefinition
    from metis_core.models.pricing import PriceTable
    from metis_core.models.registry import ModelRegistry
    from metis_core.structured.policy import OutputPolicy
    from metis_core.structured.result import StructuredResult
    from metis_core.structured.spec import OutputSpec
    from metis_core.structured.steps import OutputObserver
    from metis_core.structured.stream import PartialOutput

OutputModel = TypeVar("OutputModel", bound=BaseModel)


class CallArgs(TypedDict, total=False):
    """The keyword arguments every call form shares (for the `output=` overloads)."""

    tools: Sequence[ToolDefinition] | None
    options: AdapterOptions | None
    tool_ids: ToolIdMap | None
    session_id: str
    routing: RoutingDecisionRecord | None
    capabilities: AdapterCapabilities | None


class _PreparedCall:
    """Everything a call needs once translated: the adapter, the wire request and its body."""

    __slots__ = ("adapter", "body", "canonical", "context", "kept", "request", "url")

    def __init__(self, adapter: Adapter, request: WireRequest, url: str, body: bytes, context: RequestContext,
                 canonical: dict[str, Any] | None = None, kept: list[Any] | None = None) -> None:
        self.adapter = adapter
        self.request = request
        self.url = url
        self.body = body
        self.context = context
        self.canonical = canonical
        self.kept = kept
        """The provider's kept [environment, base URL, auth headers], read once for the URL and headers."""


class SurveyedHistory(list[Message]):
    """A history with its `survey_history` answer (token estimate, shape, repaired form), for a
    caller that surveys it anyway before the call (the gateway, for turn.started's estimate): the
    client's `_prepare` takes that answer instead of walking the history a second time, while the
    list holds as many messages as were surveyed and the tools are the very objects surveyed.
    Its messages must not be changed in place between the survey and the call (a new list, as a
    continuation builds, is surveyed again). tests/adapters/test_surveyed_history.py compares the
    prepared requests with a plain list's."""

    __slots__ = ("survey", "surveyed_length", "surveyed_tools")

    def __init__(self, messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> None:
        super().__init__(messages)
        self.surveyed_tools = tuple(tools)
        self.surveyed_length = len(self)
        self.survey: tuple[int, HistoryShape, bool] = survey_history(self, self.surveyed_tools)

    @property
    def estimated_tokens(self) -> int:
        return self.survey[0]

    def still_fits(self, tools: Sequence[ToolDefinition]) -> bool:
        """True when `tools` are the tools surveyed (the same objects) and no message came or went."""
        surveyed = self.surveyed_tools
        return (len(self) == self.surveyed_length and len(tools) == len(surveyed)
                and all(map(operator.is_, tools, surveyed)))

    def surveyed(self) -> tuple[list[Message], int, HistoryShape]:
        """What `surveyed_history` answers for this list, from the survey made at construction."""
        tokens, shape, repaired = self.survey
        history = list(self)
        return (RepairedHistory(history) if repaired else history), tokens, shape

class ModelClient:
    """Calls models through their adapters over one pooled HTTP client per direction.

    Explicit `base_urls` / `api_keys` (by provider key) win over the configuration
    (`load_config()`: environment, then config file, then built-in defaults). `prices="default"`
    prices usage with the built-in table plus config overrides; `prices=None` leaves costs None.
    `record="calls.jsonl"` writes every call to a cassette, `replay="calls.jsonl"` serves calls from
    one without any network (docs/record-replay.md); `scrub_fields` adds JSON field names to blank.
    Async calls go through aiohttp (`async_http="aiohttp"`, the least CPU per call) or httpx
    (`"httpx"`, ~60 ms cheaper to start: what one-shot processes such as the CLI use).
    """

    def __init__(
        self,
        *,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        base_urls: Mapping[str, str] | None = None,
        api_keys: Mapping[str, str | SecretStr] | None = None,
        prices: PriceTable | Literal["default"] | None = "default",
        retry: RetryPolicy | None = None,
        registry: ModelRegistry | None = None,
        config: MetisConfig | None = None,
        timeout: TimeoutArg = None,
        record: str | Path | None = None,
        replay: str | Path | None = None,
        cassette: Cassette | None = None,
        scrub_fields: Sequence[str] = (),
        async_http: AsyncHttp = "aiohttp",
    ) -> None:
        self._transport = HttpTransport(http_client, async_http_client, timeout=timeout, async_http=async_http)
        self._cassette = _open_cassette(record, replay, cassette, scrub_fields)
        self._cassette_transport: CassetteTransport | None = None
        if self._cassette is not None:
            from metis_core.cassettes.transport import CassetteTransport

            self._cassette_transport = CassetteTransport(self._transport, self._cassette)
        self._base_urls = {k: v.rstrip("/") for k, v in (base_urls or {}).items()}
        self._api_keys = {k: v if isinstance(v, SecretStr) else SecretStr(v) for k, v in (api_keys or {}).items()}
        self._prices = prices
        self.retry = retry or RetryPolicy()
        if self._cassette is not None and not self._cassette.recording:
            # a replayed 429 is retried as recorded, without waiting out its retry-after again
            self.retry = dataclasses.replace(self.retry, sleep=_no_wait, async_sleep=_ano_wait)
        self._registry = registry
        self._registry_from_config = registry is None
        """The registry is the config's own, built on first use: the price table folds ids through it too."""
        self._config = config
        self._adapters: dict[str, Adapter] = {}
        self._watches: dict[str, tuple[MetisConfig, tuple[dict[Any, Any], tuple[Any, ...]] | None]] = {}
        """provider -> (the config, its `provider_environment_watch`): what `_environment_state` reads."""
        self._sent: dict[str, list[Any]] = {}
        """provider -> [its environment when read, base URL, auth headers]: re-read only when that changes."""

    def __repr__(self) -> str:
        providers = sorted(set(self._base_urls) | set(self._api_keys))
        return f"ModelClient(configured_providers={providers})"

    @property
    def cassette(self) -> Cassette | None:
        """The cassette calls are recorded to or replayed from, if any."""
        return self._cassette

    def _wire(self, call: _PreparedCall) -> HttpTransport | CassetteCall:
        """The transport this call goes through: the HTTP transport, or the cassette bound to its request."""
        if self._cassette_transport is None or call.canonical is None:
            return self._transport
        return self._cassette_transport.bind(call.canonical)

    # --- resolution ------------------------------------------------------------------------

    @property
    def config(self) -> MetisConfig:
        if self._config is None:
            from metis_core.config import load_config

            self._config = load_config()
        return self._config

    @property
    def registry(self) -> ModelRegistry:
        if self._registry is None:
            from metis_core.models.registry import ModelRegistry

            self._registry = ModelRegistry.load(self.config)
        return self._registry

    @property
    def prices(self) -> PriceTable | None:
        if self._prices == "default":
            from metis_core.models.pricing import PriceTable

            canonical_id = self.registry.canonical_id if self._registry_from_config else None  # not a second one
            self._prices = PriceTable.load(self.config, canonical_id=canonical_id)
        return self._prices

    def adapter(self, provider: str) -> Adapter:
        found = self._adapters.get(provider)
        if found is None:
            kind = self.config.provider_kind(provider)  # a named provider speaks through its kind
            found = self._adapters[provider] = named_adapter_class(kind, provider)(self.registry)
        return found

    def base_url(self, provider: str, kept: list[Any] | None = None) -> str:
        explicit = self._base_urls.get(provider)
        if explicit is not None:
            return explicit
        kept = kept or self._kept(provider)
        if kept[1] is None:
            kept[1] = self.config.base_url(provider)
        url: str = kept[1]
        return url

    def _kept(self, provider: str) -> list[Any]:
        """[environment, base URL, auth headers] of `provider`, emptied when its environment changed.

        Reading the URL and key costs ~15 µs a call (environment lookups, key parsing); keeping them
        while the variables they come from are unchanged still picks up a key changed at run time.
        """
        environment = self._environment_state(provider)  # compared, never read as values
        kept = self._sent.get(provider)
        if kept is None or kept[0] != environment:
            kept = self._sent[provider] = [environment, None, None]
        return kept

    def _environment_state(self, provider: str) -> tuple[Any, ...]:
        """`config.provider_environment_state(provider)`, read here from the dict and keys the config's
        `provider_environment_watch` names (kept per provider while the config is the same object): the
        same tuple, without the config's Python code on every call (a named fast path, docs/gateway.md
        "What it costs"; tests/adapters/test_client_environment.py holds the two equal)."""
        config = self.config
        watch = self._watches.get(provider)
        if watch is None or watch[0] is not config:
            watch = self._watches[provider] = (config, config.provider_environment_watch(provider))
        found = watch[1]
        if found is None:  # an injected mapping, not os.environ: the config reads it
            return config.provider_environment_state(provider)
        data, keys = found
        return tuple([data.get(key) for key in keys])

    def _auth_headers(self, provider: str, adapter: Adapter, kept: list[Any] | None = None) -> dict[str, str]:
        """Key and configured extra headers, revealed here only, right before sending."""
        if self._cassette is not None:
            if not self._cassette.recording:
                return {}  # a replay sends nothing: it needs no key, so tests run where there is none
            return self._read_auth_headers(provider, adapter)  # recording registers its secrets every call
        if adapter.refreshes_auth:
            return self._read_auth_headers(provider, adapter)  # a cloud token: the adapter refreshes it
        kept = kept or self._kept(provider)
        if kept[2] is None:
            kept[2] = self._read_auth_headers(provider, adapter)
        headers: dict[str, str] = kept[2]
        return headers

    def _read_auth_headers(self, provider: str, adapter: Adapter) -> dict[str, str]:
        key = self._api_keys.get(provider) or self.config.require_api_key(provider)
        headers = self.config.extra_headers(provider)
        for value in headers.values():  # configured headers may hold gateway keys
            remember_secret(value)
        revealed = key.get_secret_value() if key is not None else None
        remember_secret(revealed)  # a body echoing it is scrubbed out of every ProviderError
        headers.update(adapter.auth_headers(revealed))
        if self._cassette is not None and self._cassette.recording:
            scrubber = self._cassette.scrubber
            secrets = [v for k, v in headers.items() if scrubber.header_is_secret(k)]
            self._cassette.add_known_secrets(secrets + ([revealed] if revealed is not None else []))
        return headers

    # --- preparing a call --------------------------------------------------------------------

    def _prepare(
        self,
        messages: Sequence[Message],
        model: str | None,
        tools: Sequence[ToolDefinition] | None,
        options: AdapterOptions | None,
        tool_ids: ToolIdMap | None,
        session_id: str,
        routing: RoutingDecisionRecord | None,
        capabilities: AdapterCapabilities | None,
        stream: bool,
    ) -> _PreparedCall:
        model_id = model or (options.model if options is not None else "")
        provider = parse_model_id(model_id).provider
        adapter = self.adapter(provider)
        tool_list = list(tools or [])
        caps = capabilities or self.registry.capabilities(model_id)
        wanted = options or AdapterOptions(model=model_id)
        if type(messages) is SurveyedHistory and messages.still_fits(tool_list):
            history, tokens, shape = messages.surveyed()  # the caller's walk, not a second one
        else:
            history, tokens, shape = surveyed_history(messages, tool_list)  # one walk: estimate, shape, repair check
        if type(adapter).estimate_input_tokens is not Adapter.estimate_input_tokens:
            tokens = adapter.estimate_input_tokens(history, tool_list)  # an adapter with its own rule
        check_fits(history, tool_list, caps, model_id, tokens,
                   structured_output=wanted.response_format is not None, shape=shape)
        session = session_id or wanted.session_id
        if wanted.model == model_id and wanted.stream == stream and wanted.session_id == session:
            options = wanted  # nothing to change: skip the copy (this runs on every call)
        else:
            options = dataclasses.replace(wanted, model=model_id, stream=stream, session_id=session)
        ids = tool_ids if tool_ids is not None else ToolIdMap()
        request = adapter.to_wire(history, tool_list, options, ids)
        kept = self._kept(provider)  # one read of the provider's environment for the URL and the headers
        url = adapter.request_url(self.base_url(provider, kept), request)
        context = RequestContext(
            model=model_id, session_id=options.session_id, tool_ids=ids, routing=routing, prices=self.prices,
            tools=tool_list,
        )
        canonical = None
        if self._cassette is not None:
            from metis_core.cassettes.canonical import canonical_request, options_json

            canonical = canonical_request(model_id, history, tool_list, options_json(options))
        return _PreparedCall(adapter, request, url, request.body_json(), context, canonical, kept)

    def _headers(self, call: _PreparedCall) -> dict[str, str]:
        auth = self._auth_headers(call.adapter.provider, call.adapter, call.kept)
        headers = {"content-type": "application/json", **call.request.headers, **auth}
        adapter = call.adapter
        if type(adapter).sign_request is not Adapter.sign_request and (
                self._cassette is None or self._cassette.recording):  # a replay sends nothing to sign for
            headers = adapter.sign_request(call.request.method, call.url, call.body, headers)
        return headers

    async def _aheaders(self, call: _PreparedCall) -> dict[str, str]:
        """`_headers`, in a worker thread when the adapter refreshes a cloud token: that refresh is a
        blocking HTTP call (docs/adapters/vertex.md)."""
        if not call.adapter.refreshes_auth:
            return self._headers(call)
        import asyncio

        return await asyncio.to_thread(self._headers, call)

    @staticmethod
    def _answer(call: _PreparedCall, response: WireResponse) -> Message:
        """The message a whole answer holds (its usage priced), or the ProviderError its status stands for."""
        if not 200 <= response.status < 300:
            raise classify_checked(call.adapter, response)
        return parse_response_checked(call.adapter, response, call.context)

    # --- non-streaming -----------------------------------------------------------------------

    @overload
    def complete(self, messages: Sequence[Message], model: str | None = None, *, output: None = None,
                 **kwargs: Unpack[CallArgs]) -> Message: ...
    @overload
    def complete(self, messages: Sequence[Message], model: str | None = None, *, output: type[OutputModel],
                 output_policy: OutputPolicy | None = None, on_output_step: OutputObserver | None = None,
                 **kwargs: Unpack[CallArgs]) -> StructuredResult[OutputModel]: ...
    @overload
    def complete(self, messages: Sequence[Message], model: str | None = None, *,
                 output: Mapping[str, Any] | OutputSpec, output_policy: OutputPolicy | None = None,
                 on_output_step: OutputObserver | None = None, **kwargs: Unpack[CallArgs]) -> StructuredResult[Any]: ...

    def complete(
        self,
        messages: Sequence[Message],
        model: str | None = None,
        *,
        tools: Sequence[ToolDefinition] | None = None,
        options: AdapterOptions | None = None,
        tool_ids: ToolIdMap | None = None,
        session_id: str = "",
        routing: RoutingDecisionRecord | None = None,
        capabilities: AdapterCapabilities | None = None,
        output: type[BaseModel] | Mapping[str, Any] | OutputSpec | None = None,
        output_policy: OutputPolicy | None = None,
        on_output_step: OutputObserver | None = None,
    ) -> Message | StructuredResult[Any]:
        """One non-streaming call. Raises CapabilityMismatchError before sending, ProviderError after.

        With `output=` (a pydantic model class or a JSON Schema dict) it returns a StructuredResult whose
        `value` is validated, retrying as `output_policy` allows (docs/structured-output.md); refusals
        raise OutputRefusedError, exhaustion OutputValidationError. Steps go to `on_output_step`."""
        if output is not None:
            from metis_core.adapters.structured_calls import CallSettings, complete_structured

            settings = CallSettings(model, options, session_id, capabilities, output_policy, on_output_step,
                                    {"tool_ids": tool_ids, "routing": routing})
            return complete_structured(self, messages, tools, output, settings)
        call = self._prepare(messages, model, tools, options, tool_ids, session_id, routing, capabilities, False)
        headers = self._headers(call)
        provider = call.adapter.provider

        def attempt() -> Message:
            response = self._wire(call).send(call.request.method, call.url, call.body, headers, provider=provider)
            return self._answer(call, response)

        return self.retry.call(attempt)

    @overload
    async def acomplete(self, messages: Sequence[Message], model: str | None = None, *, output: None = None,
                        **kwargs: Unpack[CallArgs]) -> Message: ...
    @overload
    async def acomplete(self, messages: Sequence[Message], model: str | None = None, *,
                        output: type[OutputModel], output_policy: OutputPolicy | None = None,
                        on_output_step: OutputObserver | None = None,
                        **kwargs: Unpack[CallArgs]) -> StructuredResult[OutputModel]: ...
    @overload
    async def acomplete(self, messages: Sequence[Message], model: str | None = None, *,
                        output: Mapping[str, Any] | OutputSpec, output_policy: OutputPolicy | None = None,
                        on_output_step: OutputObserver | None = None,
                        **kwargs: Unpack[CallArgs]) -> StructuredResult[Any]: ...

    async def acomplete(
        self,
        messages: Sequence[Message],
        model: str | None = None,
        *,
        tools: Sequence[ToolDefinition] | None = None,
        options: AdapterOptions | None = None,
        tool_ids: ToolIdMap | None = None,
        session_id: str = "",
        routing: RoutingDecisionRecord | None = None,
        capabilities: AdapterCapabilities | None = None,
        output: type[BaseModel] | Mapping[str, Any] | OutputSpec | None = None,
        output_policy: OutputPolicy | None = None,
        on_output_step: OutputObserver | None = None,
    ) -> Message | StructuredResult[Any]:
        """Async `complete`, `output=` included."""
        if output is not None:
            from metis_core.adapters.structured_calls import CallSettings, acomplete_structured

            settings = CallSettings(model, options, session_id, capabilities, output_policy, on_output_step,
                                    {"tool_ids": tool_ids, "routing": routing})
            return await acomplete_structured(self, messages, tools, output, settings)
        call = self._prepare(messages, model, tools, options, tool_ids, session_id, routing, capabilities, False)
        headers = await self._aheaders(call)
        provider = call.adapter.provider
        retry = self.retry
        if type(retry).acall is RetryPolicy.acall:
            # RetryPolicy.acall's loop, written out: no closure and no coroutine of its own per call (a
            # named fast path, docs/gateway.md "What it costs"); a policy with its own `acall` goes through it.
            tries = 0
            while True:
                try:
                    response = await self._wire(call).asend(call.request.method, call.url, call.body, headers,
                                                            provider=provider)
                    return self._answer(call, response)
                except ProviderError as error:
                    await retry.abackoff(error, tries)
                    tries += 1

        async def attempt() -> Message:
            wire = self._wire(call)
            response = await wire.asend(call.request.method, call.url, call.body, headers, provider=provider)
            return self._answer(call, response)

        return await retry.acall(attempt)

    # --- streaming ---------------------------------------------------------------------------

    @overload
    def stream(self, messages: Sequence[Message], model: str | None = None, *, output: None = None,
               **kwargs: Unpack[CallArgs]) -> Iterator[StreamEvent]: ...
    @overload
    def stream(self, messages: Sequence[Message], model: str | None = None, *,
               output: type[BaseModel] | Mapping[str, Any] | OutputSpec, output_policy: OutputPolicy | None = None,
               on_output_step: OutputObserver | None = None, **kwargs: Unpack[CallArgs]) -> Iterator[PartialOutput]: ...

    def stream(
        self,
        messages: Sequence[Message],
        model: str | None = None,
        *,
        tools: Sequence[ToolDefinition] | None = None,
        options: AdapterOptions | None = None,
        tool_ids: ToolIdMap | None = None,
        session_id: str = "",
        routing: RoutingDecisionRecord | None = None,
        capabilities: AdapterCapabilities | None = None,
        output: type[BaseModel] | Mapping[str, Any] | OutputSpec | None = None,
        output_policy: OutputPolicy | None = None,
        on_output_step: OutputObserver | None = None,
    ) -> Iterator[StreamEvent] | Iterator[PartialOutput]:
        """Stream canonical events; always ends with one `message_complete` unless it raises first.

        Failures before any content are raised (and retried when transient); later ones end the
        stream with an `error` event and a PARTIAL message. The capability check and request
        building run when this is called, not on first iteration. With `output=` it yields
        PartialOutput updates instead: lenient partial values, then one final strictly validated one.
        """
        if output is not None:
            from metis_core.adapters.structured_calls import CallSettings, stream_structured

            settings = CallSettings(model, options, session_id, capabilities, output_policy, on_output_step,
                                    {"tool_ids": tool_ids, "routing": routing})
            return stream_structured(self, messages, tools, output, settings)
        from metis_core.adapters.client_streams import stream_events  # streams only: a call never loads it

        call = self._prepare(messages, model, tools, options, tool_ids, session_id, routing, capabilities, True)
        return stream_events(self, call, self._headers(call))

    def astream_output(
        self,
        messages: Sequence[Message],
        model: str | None = None,
        *,
        output: type[BaseModel] | Mapping[str, Any] | OutputSpec,
        output_policy: OutputPolicy | None = None,
        on_output_step: OutputObserver | None = None,
        **kwargs: Unpack[CallArgs],
    ) -> AsyncIterator[PartialOutput]:
        """Async structured streaming (`astream` itself stays an async generator of StreamEvents)."""
        from metis_core.adapters.structured_calls import CallSettings, astream_structured

        settings = CallSettings(model, kwargs.get("options"), kwargs.get("session_id", ""),
                                kwargs.get("capabilities"), output_policy, on_output_step,
                                {"tool_ids": kwargs.get("tool_ids"), "routing": kwargs.get("routing")})
        return astream_structured(self, messages, kwargs.get("tools"), output, settings)

    def astream(
        self,
        messages: Sequence[Message],
        model: str | None = None,
        *,
        tools: Sequence[ToolDefinition] | None = None,
        options: AdapterOptions | None = None,
        tool_ids: ToolIdMap | None = None,
        session_id: str = "",
        routing: RoutingDecisionRecord | None = None,
        capabilities: AdapterCapabilities | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Async `stream`. Cancellation (asyncio.CancelledError) propagates and closes the response.
        An async generator (adapters/client_streams.py): the call is prepared at the first `anext`."""
        from metis_core.adapters.client_streams import astream_events

        return astream_events(self, lambda: self._prepare(messages, model, tools, options, tool_ids, session_id,
                                                          routing, capabilities, True))

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def async_client_bound_to_one_loop(self) -> bool:
        """Whether async calls go through an `async_http_client` passed in that pools network
        connections: it serves the event loop it was first used on only (HttpTransport)."""
        return self._transport.async_client_bound_to_one_loop

    def close(self) -> None:
        self._transport.close()

    async def aclose(self) -> None:
        await self._transport.aclose()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _no_wait(seconds: float) -> None:
    """A wait that does not wait."""


async def _ano_wait(seconds: float) -> None:
    """The async wait that does not wait."""


def _open_cassette(record: str | Path | None, replay: str | Path | None, cassette: Cassette | None,
                   scrub_fields: Sequence[str]) -> Cassette | None:
    chosen = [name for name, value in (("record", record), ("replay", replay), ("cassette", cassette))
              if value is not None]
    if len(chosen) > 1:
        raise ValueError(f"pass one of record=, replay= or cassette=, not {' and '.join(chosen)}")
    if cassette is not None:
        return cassette
    if record is None and replay is None:
        return None
    from metis_core.cassettes.cassette import Cassette
    from metis_core.cassettes.scrub import DEFAULT_FIELDS, Scrubber

    scrubber = Scrubber(fields=(*DEFAULT_FIELDS, *scrub_fields))
    if record is not None:
        return Cassette(record, "record", scrubber=scrubber)
    if replay is not None:
        return Cassette(replay, "replay", scrubber=scrubber)
    return None
