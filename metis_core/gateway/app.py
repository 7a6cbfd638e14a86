"""The gateway's HTTP surface: every route in one table, each a thin function over GatewayService.

OpenAI shapes: POST /v1/chat/completions, POST /v1/responses, GET /v1/models. Anthropic shape: POST /v1/messages,
POST /v1/messages/count_tokens. Probes: GET /healthz, GET /readyz. A refused or failed request
gets its shape's error body and status (with Retry-After on 429), never a traceback. Streams are
written frame by frame as upstream events arrive, and a client that goes away cancels the
upstream request, streaming or not (a disconnect listener runs beside the upstream calls, structured
runs included). A paused Claude answer is continued before the client's answer ends (continued_call.py).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, Final, Protocol, TypeVar

import anyio
import orjson
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from metis_core.adapters._common.token_estimate import estimate_tokens
from metis_core.errors import (
    AllModelsFailedError,
    CapabilityMismatchError,
    GatewayBodyTooLargeError,
    GatewayError,
    GatewayRequestError,
    MetisError,
    MissingAPIKeyError,
    OutputSchemaError,
    OutputValidationError,
    ProviderError,
    ToolSchemaError,
)
from metis_core.gateway.app_generators import closing_lifespan, stream_frames
from metis_core.gateway.call_budget import CallBudget, cut_usage
from metis_core.gateway.call_record import CallRecord
from metis_core.gateway.continued_call import ContinuedCall
from metis_core.gateway.disconnect_watch import DisconnectWatcher
from metis_core.gateway.key_check import presented_token, token_in_headers
from metis_core.gateway.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from metis_core.gateway.metrics import OperatorMetrics
from metis_core.gateway.service import GatewayService, upstream_failure
from metis_core.gateway.shapes.anthropic_messages import AnthropicMessagesShape
from metis_core.gateway.shapes.base import InboundShape, is_output_refusal
from metis_core.gateway.shapes.openai_chat import OpenAIChatShape
from metis_core.gateway.shapes.openai_responses import OpenAIResponsesShape
from metis_core.gateway.structured_call import StructuredAsk, answer_events, answer_structured, structured_ask
from metis_core.gateway.web_guard import WebGuard, WebPolicy
from metis_core.messages import Message

log = logging.getLogger("metis_core.gateway")
Answer = TypeVar("Answer")
CALL_FAILURES: Final = (ProviderError, CapabilityMismatchError, AllModelsFailedError, OutputValidationError,
                 OutputSchemaError, ToolSchemaError, GatewayError)
OPENAI: Final = OpenAIChatShape()
RESPONSES: Final = OpenAIResponsesShape()
ANTHROPIC: Final = AnthropicMessagesShape()
CALL_RECORD_KEY: Final = "metis.call_record"
"""Where `call` leaves the request's CallRecord in the ASGI scope (the metrics read its model)."""


class JsonAnswer(Response):
    """A JSON answer: the same status, headers and body bytes as Starlette's
    `Response(body, status, headers, media_type="application/json")`, built and sent without its
    general path (a named fast path: docs/gateway.md "What it costs"). Starlette's `__init__`
    renders the content, looks the body up by name and decides the content type's charset, and its
    `__call__` checks for a websocket and a background task: nothing a gateway answer has, on every call.
    tests/gateway/test_gateway_json_answer.py compares the messages sent with Starlette's."""

    def __init__(self, body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.background = None
        self.body = body
        if headers is None and status >= 200 and status not in (204, 304):  # every answer's case, written out
            self.raw_headers = [(b"content-length", str(len(body)).encode("latin-1")),
                                (b"content-type", b"application/json")]
            return
        raw: list[tuple[bytes, bytes]] = [] if headers is None else [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        names = [name for name, _ in raw]
        if b"content-length" not in names and not (status < 200 or status in (204, 304)):
            raw.append((b"content-length", str(len(body)).encode("latin-1")))
        if b"content-type" not in names:
            raw.append((b"content-type", b"application/json"))
        self.raw_headers = raw

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # not on the gateway's routes: Starlette's path (its websocket denial)
            await super().__call__(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.body})


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JsonAnswer(orjson.dumps(payload), status, headers)


def error_response(shape: InboundShape, status: int, kind: str, message: str,
                   retry_after: float | None = None) -> Response:
    headers = {"retry-after": str(math.ceil(retry_after))} if retry_after is not None else None
    return json_response(shape.error_body(status, kind, message), status, headers)


def declared_length(raw: Iterable[tuple[bytes, bytes]]) -> str | None:
    """`request.headers.get("content-length")` read from the ASGI scope's headers directly, as
    Starlette's `Headers.get` reads it (the first one, names compared as sent, the value decoded as
    latin-1), without building a `Headers` object on every call."""
    for name, value in raw:
        if name == b"content-length":
            return value.decode("latin-1")
    return None


async def read_json_body(request: Incoming, limit: int) -> dict[str, Any]:
    declared = declared_length(request.scope["headers"])
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise GatewayBodyTooLargeError(f"the request body is over this gateway's limit of {limit} bytes")
    # The ASGI messages read here directly, as `Request.stream()` reads them, without its async generator.
    receive = request.receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "http.request":
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise GatewayBodyTooLargeError(f"the request body is over this gateway's limit of {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        elif kind == "http.disconnect":
            raise ClientDisconnect()
    try:
        body = orjson.loads(chunks[0] if len(chunks) == 1 else b"".join(chunks))
    except orjson.JSONDecodeError as error:
        raise GatewayRequestError(f"the request body is not valid JSON ({error})") from None
    if not isinstance(body, dict):
        raise GatewayRequestError("the request body must be a JSON object")
    return body


async def client_gone(receive: Receive) -> None:
    """Returns when the client disconnects (the request body has been read: nothing else can come)."""
    while (await receive())["type"] != "http.disconnect":
        continue


class DisconnectAwareStream(StreamingResponse):
    """A StreamingResponse that always watches for the client leaving, so a silent upstream is
    still cancelled (Starlette skips the watcher for ASGI spec 2.4 servers)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:

            async def stream() -> None:
                with contextlib.suppress(OSError):  # the client went away while we were writing
                    await self.stream_response(send)
                group.cancel_scope.cancel()

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    continue
                group.cancel_scope.cancel()

            group.start_soon(stream)
            await watch()
        close = getattr(self.body_iterator, "aclose", None)
        if close is not None:  # a stream left at a `yield` by the cancel: close it (and its upstream) now
            with anyio.CancelScope(shield=True):
                await close()


class Incoming(Protocol):
    """What the call routes read of a request: its ASGI scope and `receive` (a starlette Request has both)."""

    @property
    def scope(self) -> Scope: ...

    @property
    def receive(self) -> Receive: ...


class CallRequest:
    """A call route's request as `GatewayApp.call` reads it: the ASGI scope and `receive`, without
    starlette's `Request` (whose `__init__`, Python code, ran on every call to be read for two attributes)."""

    __slots__ = ("receive", "scope")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self.receive = receive


class Endpoint:
    """A route's ASGI app: the request handed to `handler`, its response sent. Starlette's own
    wrapper (`request_response`) adds a per-request exception-handler scope the gateway has no use
    for: every handler answers its own errors, and one that escapes is answered here, in `shape`'s
    error format (500), and logged, so no route ever answers with a traceback or a plain-text 500."""

    __slots__ = ("handler", "shape")

    def __init__(self, handler: Callable[[Request], Awaitable[Response]], shape: InboundShape = OPENAI) -> None:
        self.handler = handler
        self.shape = shape

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            response = await self.handler(Request(scope, receive, send))
        except Exception as error:
            response = self.escaped(scope, error)
        await response(scope, receive, send)

    def escaped(self, scope: Scope, error: Exception) -> Response:
        """The answer to an error no handler answered: logged, and a 500 in the route's shape."""
        log.exception("gateway request %s %s failed", scope["method"], scope["path"], exc_info=error)
        failure = upstream_failure(error)
        return error_response(self.shape, failure.status, failure.kind, failure.message)


class CallEndpoint(Endpoint):
    """A call route's Endpoint (a named fast path: docs/gateway.md "What it costs"): `GatewayApp.call`
    with the route's shape, called directly with a `CallRequest`, where `Endpoint` would build a
    starlette `Request` and call `handler`, a `functools.partial` of the same method (kept as `handler`:
    what the route means). Errors that escape are answered as `Endpoint` answers them.
    tests/gateway/test_gateway_call_endpoint.py compares the two on every call route."""

    __slots__ = ("app",)

    def __init__(self, app: GatewayApp, shape: InboundShape) -> None:
        super().__init__(functools.partial(app.call, shape=shape), shape)
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app.metrics is not None:
            await self.measured(self.app.metrics, scope, receive, send)
            return
        try:
            response = await self.app.call(CallRequest(scope, receive), self.shape)
        except Exception as error:
            response = self.escaped(scope, error)
        await response(scope, receive, send)

    async def measured(self, metrics: OperatorMetrics, scope: Scope, receive: Receive, send: Send) -> None:
        """`__call__` with the request counted and timed (to the answer's last byte) once it ends."""
        started = time.perf_counter()
        response: Response | None = None
        try:
            try:
                response = await self.app.call(CallRequest(scope, receive), self.shape)
            except Exception as error:
                response = self.escaped(scope, error)
            await response(scope, receive, send)
        finally:
            record: CallRecord | None = scope.get(CALL_RECORD_KEY)
            status = response.status_code if response is not None else 500
            model, provider = (record.asked_model, record.model.partition(":")[0]) if record else ("", "")
            metrics.observe_request(scope["path"], model, provider, status, time.perf_counter() - started)


class GatewayStarlette(Starlette):
    """The gateway's Starlette app, with its own routes dispatched before Starlette's stack (a named
    fast path: docs/gateway.md "What it costs").

    A request whose method and path are exactly one of the gateway's routes goes straight to that
    route's Endpoint: Starlette's ServerErrorMiddleware, ExceptionMiddleware and Router add nothing
    there (the Endpoint answers every error itself, and the route table matches exact paths), yet
    cost a few closures, three regex matches and two wrappers around every `send` per call.
    Everything else (lifespan, a HEAD, a wrong method's 405, an unknown path's 404, a trailing slash,
    a `root_path`, routes mounted after, such as `metis serve --web`'s) goes through Starlette as before,
    and so does every request once a middleware has been added to the app (the fast path would skip it).
    """

    def __init__(self, direct: dict[tuple[str, str], Endpoint], *, policy: WebPolicy | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.direct = direct
        """(method, path) -> the Endpoint its Route holds."""
        self.guard = WebGuard(None, policy)
        """Host allow-list, Origin and content-type checks and security headers, before either path."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.guard.guarded(self.dispatch, scope, receive, send)

    async def dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path") and not self.user_middleware:
            endpoint = self.direct.get((scope["method"], scope["path"]))
            if endpoint is not None:
                scope["app"] = self
                await endpoint(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


class GatewayApp:
    """Routes bound to one GatewayService."""

    def __init__(self, service: GatewayService, metrics: OperatorMetrics | None = None) -> None:
        self.service = service
        self.metrics = metrics

    # --- the two call shapes ----------------------------------------------------------------

    async def chat_completions(self, request: Request) -> Response:
        return await self.call(request, OPENAI)

    async def responses(self, request: Request) -> Response:
        return await self.call(request, RESPONSES)

    async def messages(self, request: Request) -> Response:
        return await self.call(request, ANTHROPIC)

    async def call(self, request: Incoming, shape: InboundShape) -> Response:
        service = self.service
        try:
            key = service.authenticate(token_in_headers(request.scope["headers"]), shape)
            body = await read_json_body(request, service.settings.max_body_bytes)
            asked = body.get("model")
            members = service.allowed_members(key, str(asked), service.resolve(asked, shape))
            subjects = await service.admit(key, shape, str(asked))
            inbound, session_id = service.read(shape, body, members)
            ask = structured_ask(inbound, forced_tool=shape.forced_tool_is_schema)
            budget = service.reserve(key, subjects, shape, inbound, members, str(asked))  # before any upstream call
        except GatewayError as error:
            return error_response(shape, error.status, error.kind, str(error), error.retry_after)
        except ClientDisconnect:
            return Response(status_code=499)
        record = service.open_call(key, shape, inbound, session_id, str(asked))
        request.scope[CALL_RECORD_KEY] = record
        if ask is not None:
            return await self.structured(request, shape, record, members, budget, ask)
        run = ContinuedCall(service, record, members, budget)
        if inbound.stream:
            return await self.stream(shape, record, run)
        try:
            final = await self.answer_unless_gone(request, record, run.answer())
        except Exception as error:  # every failure is answered in the shape's format
            return self.failed(shape, record, error, budget)
        if final is None:  # the client went away; the upstream request was cancelled
            self.cut(record, budget, None, "the client disconnected before the answer")
            return Response(status_code=499)
        self.finish(record, final, run)
        return json_response(shape.response_body(final, str(asked), inbound.tool_ids))

    async def answer_unless_gone(self, request: Incoming, record: CallRecord,
                                 work: Coroutine[Any, Any, Answer]) -> Answer | None:
        """What `work` (the upstream calls of a non-streamed answer) returns, or None when the client
        disconnected first: then `work` is cancelled (the upstream request in flight is closed), and the
        caller charges and records the cut call (`cut`); calls already finished were charged as they ended.

        `work` runs in this handler's own task; one watcher task cancels it when the client leaves
        (cheaper than running `work` as a task of its own and waiting on both)."""
        watcher = DisconnectWatcher(request.receive)
        try:
            answer = await work
        except BaseException:
            if not watcher.stop():  # a failure of its own, or this handler cancelled (server shutdown)
                raise
            answer = None  # the cancel the watcher asked for is the outcome wanted, however `work` ended
        else:
            if not watcher.stop():
                return answer
        return None

    def cut(self, record: CallRecord, budget: CallBudget, partial: Message | None, why: str) -> None:
        """The client left the call in flight: charge what it used and record it at that price
        (call_budget.cut_usage), so the key's counter, the store and the trace agree."""
        charged = budget.cut(partial)
        record.cancelled(partial, why, cut_usage(partial, record.estimated_tokens, charged,
                                                 self.service.rt.client.prices, record.model))

    async def structured(self, request: Incoming, shape: InboundShape, record: CallRecord, members: list[str],
                         budget: CallBudget, ask: StructuredAsk) -> Response:
        """A structured-output ask: the whole run (every retry) happens before the first byte, so a
        stream carries only the final, validated value, and an exhausted run is an error response.
        A client that leaves during the run cancels it, as for any non-streamed answer."""
        try:
            answer = await self.answer_unless_gone(
                request, record, answer_structured(self.service, record, members, ask, budget))
        except Exception as error:  # every failure is answered in the shape's format
            return self.failed(shape, record, error, budget)
        if answer is None:  # the client went away; the attempt in flight was cancelled
            self.cut(record, budget, None, "the client disconnected before the answer")
            return Response(status_code=499)
        budget.close()  # every attempt was charged as it ended: release what is left
        record.answered(answer)
        inbound = record.request
        if not inbound.stream:
            return json_response(shape.response_body(answer, record.asked_model, inbound.tool_ids))
        writer = shape.stream_writer(record.asked_model, inbound.tool_ids, inbound)
        writer.upstream_provider = record.model.partition(":")[0]
        writer.upstream_model = record.model
        frames = writer.refusal(answer.text()) if is_output_refusal(answer) else b""
        frames += b"".join(writer.feed(event) for event in answer_events(answer, text=not frames))
        return Response(frames, media_type="text/event-stream", headers={"cache-control": "no-cache"})

    def failed(self, shape: InboundShape, record: CallRecord, error: BaseException, budget: CallBudget) -> Response:
        budget.close()  # no answer: the reservation goes back whole
        if isinstance(error, MissingAPIKeyError):  # the operator's to fix: one line saying how, no traceback
            log.warning("gateway call %s: %s", record.session_id, error)
        elif not isinstance(error, CALL_FAILURES):
            log.exception("gateway call %s failed", record.session_id, exc_info=error)
        record.errored(error)
        failure = upstream_failure(error)
        return error_response(shape, failure.status, failure.kind, failure.message, failure.retry_after)

    def finish(self, record: CallRecord, final: Message, run: ContinuedCall) -> None:
        if run.continued:  # each upstream call was charged and recorded as it ended
            run.budget.close()
            record.answered(final, run.limit_error)
            return
        record.completed(final, self.service.charge(run.budget, final))

    async def stream(self, shape: InboundShape, record: CallRecord, run: ContinuedCall) -> Response:
        inbound = record.request
        writer = shape.stream_writer(record.asked_model, inbound.tool_ids, inbound)
        record.stream_writer = writer
        events = run.events(stream=True)
        try:  # the first event decides the status: a call that fails before answering is an error response
            first = await anext(events)
        except Exception as error:
            return self.failed(shape, record, error, run.budget)

        frames = stream_frames(self, record, run, writer, first, events)  # app_generators.py: interpreted
        return DisconnectAwareStream(frames, media_type="text/event-stream",
                                     headers={"cache-control": "no-cache", "x-accel-buffering": "no"})

    # --- the rest ---------------------------------------------------------------------------

    async def count_tokens(self, request: Request) -> Response:
        service = self.service
        try:
            service.authenticate(presented_token(request), ANTHROPIC)
            body = await read_json_body(request, service.settings.max_body_bytes)
            members = service.resolve(body.get("model"), ANTHROPIC)
            inbound, _ = service.read(ANTHROPIC, body, members)
        except GatewayError as error:
            return error_response(ANTHROPIC, error.status, error.kind, str(error), error.retry_after)
        adapter = service.rt.client.adapter(members[0].partition(":")[0])
        tokens = adapter.estimate_input_tokens(inbound.messages, inbound.tools)
        return json_response({"input_tokens": tokens if tokens else estimate_tokens(inbound.messages, inbound.tools)})

    async def models(self, request: Request) -> Response:
        shape = ANTHROPIC if "anthropic-version" in request.headers else OPENAI
        try:
            self.service.authenticate(presented_token(request), shape)
        except GatewayError as error:
            return error_response(shape, error.status, error.kind, str(error))
        rt, engine = self.service.rt, self.service.engine

        def served(name: str) -> bool:  # an alias or chain with a member whose provider has a key here
            try:
                return any(rt.is_configured(model) for model in engine.expand(name))
            except MetisError:
                return False

        ids = [m.id for m in rt.registry.models() if rt.is_configured(m.id)]  # no key, no listing: it would 404
        aliases = list(engine.policy.aliases()) + list(engine.policy.chains())
        names = [*ids, *sorted(name for name in {*rt.registry.aliases(), *aliases} if served(name))]
        if shape is ANTHROPIC:
            data = [{"id": n, "type": "model", "display_name": n, "created_at": "1970-01-01T00:00:00Z"} for n in names]
            return json_response({"data": data, "has_more": False, "first_id": names[0] if names else None,
                                  "last_id": names[-1] if names else None})
        return json_response({"object": "list", "data": [
            {"id": n, "object": "model", "created": 0, "owned_by": n.partition(":")[0] if ":" in n else "metis"}
            for n in names
        ]})  # fmt: skip

    async def metrics_text(self, request: Request) -> Response:
        """`GET /metrics` (present only when metrics are on): Prometheus text for a scrape with the
        metrics bearer or an admin key; 401 / 403 otherwise."""
        assert self.metrics is not None
        try:
            self.metrics.check_scrape(presented_token(request), self.service.keys)
        except GatewayError as error:
            return error_response(OPENAI, error.status, error.kind, str(error))
        body = await anyio.to_thread.run_sync(self.metrics.render)
        return Response(body, headers={"content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store"})

    async def healthz(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        try:
            self.service.key_store.ping()
            self.service.rt.registry.providers()
        except MetisError as error:
            return json_response({"status": "unavailable", "reason": str(error)}, 503)
        except Exception as error:  # a probe answers, it does not crash
            return json_response({"status": "unavailable", "reason": type(error).__name__}, 503)
        return json_response({"status": "ready"})


def create_app(service: GatewayService, policy: WebPolicy | None = None,
               metrics: OperatorMetrics | None = None) -> Starlette:
    """The ASGI application: the route table below is the whole gateway surface. `policy`: the
    allowed Host names and origins (default: METIS_ALLOWED_HOSTS / METIS_ALLOWED_ORIGINS).
    `metrics` adds `GET /metrics` and counts every call (docs/gateway.md "Metrics")."""
    app = GatewayApp(service, metrics)
    table = [
        # the call routes hand the request to `call` itself (what `chat_completions`, `responses` and
        # `messages` do, without their coroutine in between: one frame fewer on every resume of a call)
        ("/v1/chat/completions", "POST", CallEndpoint(app, OPENAI)),
        ("/v1/responses", "POST", CallEndpoint(app, RESPONSES)),
        ("/v1/messages", "POST", CallEndpoint(app, ANTHROPIC)),
        ("/v1/messages/count_tokens", "POST", Endpoint(app.count_tokens, ANTHROPIC)),
        ("/v1/models", "GET", Endpoint(app.models, OPENAI)),
        ("/healthz", "GET", Endpoint(app.healthz, OPENAI)),
        ("/readyz", "GET", Endpoint(app.readyz, OPENAI)),
        *([("/metrics", "GET", Endpoint(app.metrics_text, OPENAI))] if metrics is not None else []),
    ]
    routes = [Route(path, endpoint, methods=[method]) for path, method, endpoint in table]

    starlette = GatewayStarlette({(method, path): endpoint for path, method, endpoint in table},
                                 policy=policy or WebPolicy.from_env(), routes=routes,
                                 lifespan=closing_lifespan(service))
    starlette.state.service = service
    return starlette
