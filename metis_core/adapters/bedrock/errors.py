"""Bedrock error responses and stream exceptions -> the ProviderError class a caller acts on.

AWS names the error in the `x-amzn-ErrorType` header (`ThrottlingException:http://...`), sometimes
as `__type` in the body, with `{"message": ...}` as the body; inside a ConverseStream the same
names arrive as exception messages (`:exception-type` `throttlingException`). The name decides
the class, the HTTP status is the fallback. Credentials never reach a message: only AWS's own
text, scrubbed of every remembered secret, and a hint of what to do next.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import orjson

from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    ErrorClass,
    InvalidRequestError,
    OtherProviderError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from metis_core.transport.retry import parse_retry_after
from metis_core.transport.wire import WireResponse, request_id_from_headers

PROVIDER = "bedrock"


class BedrockCredentialsError(AuthenticationError):
    """No AWS credentials were found, or the ones found are expired, invalid or unrecognised."""


class BedrockModelAccessError(AuthenticationError):
    """AccessDenied: the model is not enabled in this account and region, or IAM forbids the call."""


class BedrockThrottlingError(RateLimitError):
    """ThrottlingException / ServiceQuotaExceeded / ModelNotReady: retryable after a wait."""


class BedrockValidationError(InvalidRequestError):
    """ValidationException: Bedrock refused the request as built (model id, fields, sizes)."""


class BedrockModelError(ServerError):
    """The model failed or timed out inside Bedrock (ModelStreamError, ModelTimeout, InternalServer)."""


ERROR_NAMES: dict[str, type[ProviderError]] = {
    "throttlingexception": BedrockThrottlingError,
    "servicequotaexceededexception": BedrockThrottlingError,
    "modelnotreadyexception": BedrockThrottlingError,
    "toomanyrequestsexception": BedrockThrottlingError,
    "accessdeniedexception": BedrockModelAccessError,
    "expiredtokenexception": BedrockCredentialsError,
    "unrecognizedclientexception": BedrockCredentialsError,
    "invalidsignatureexception": BedrockCredentialsError,
    "incompletesignatureexception": BedrockCredentialsError,
    "missingauthenticationtokenexception": BedrockCredentialsError,
    "validationexception": BedrockValidationError,
    "resourcenotfoundexception": BedrockValidationError,
    "modelerrorexception": BedrockModelError,
    "modelstreamerrorexception": BedrockModelError,
    "modeltimeoutexception": BedrockModelError,
    "internalserverexception": BedrockModelError,
    "serviceunavailableexception": BedrockModelError,
}

_NEXT_STEP: dict[type[ProviderError], str] = {
    BedrockCredentialsError: "refresh your AWS credentials (e.g. `aws sso login`, a new session token, or "
                             "AWS_PROFILE), or set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key",
    BedrockModelAccessError: "enable access to this model in the Bedrock console for this account and region, "
                             "use an inference profile id (us./eu./global.) the account may call, or grant "
                             "bedrock:InvokeModel to the credentials in use",
    BedrockThrottlingError: "wait and retry, ask AWS for a higher quota, or fall back to another model or region",
    BedrockValidationError: "check the model id (a base id, an inference profile id or its ARN) and the request",
    BedrockModelError: "Bedrock or the model failed; retry shortly or fall back to another model",
    ContextOverflowError: "compact the session or switch to a model with a larger context",
}

_CONTEXT_OVERFLOW = r"(?i)too many (input )?tokens|input is too long|prompt is too long|context (window|length)"


def error_name_from(value: str | None) -> str | None:
    """`ThrottlingException:http://internal.amazon.com/...` or `com.amazon#ThrottlingException` -> the bare name."""
    if not value:
        return None
    name = value.split(":", 1)[0]
    return name.rsplit("#", 1)[-1] or None


def class_for(name: str | None, status: int | None, message: str) -> type[ProviderError]:
    found = ERROR_NAMES.get((name or "").lower())
    if found is None:
        if status == 403:
            found = BedrockModelAccessError
        elif status == 401:
            found = BedrockCredentialsError
        elif status == 429:
            found = BedrockThrottlingError
        elif status is not None and (status >= 500 or status == 408):
            found = BedrockModelError
        elif status is not None and 400 <= status < 500:
            found = BedrockValidationError
        else:
            found = OtherProviderError
    if issubclass(found, InvalidRequestError) and re.search(_CONTEXT_OVERFLOW, message):
        found = ContextOverflowError
    return found


def with_hint(cls: type[ProviderError], message: str) -> str:
    hint = _NEXT_STEP.get(cls)
    return f"{message} ({hint})" if hint else message


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header in any case (a plain dict's too)."""
    found = headers.get(name)
    if found is None:
        found = next((v for k, v in headers.items() if k.lower() == name), None)
    return found


def classify_error(response: WireResponse) -> ProviderError:
    headers = response.headers
    name = error_name_from(_header(headers, "x-amzn-errortype"))
    message = ""
    try:
        body = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict):
        found = body.get("message") or body.get("Message")
        message = found if isinstance(found, str) else ""
        if name is None and isinstance(body.get("__type"), str):
            name = error_name_from(body["__type"])
    if not message:
        excerpt = response.body[:200].decode("utf-8", "replace").strip()
        message = excerpt or f"HTTP {response.status} with an empty body"
    cls = class_for(name, response.status, message)
    return cls(
        with_hint(cls, message),
        provider=PROVIDER,
        status=response.status,
        request_id=_header(headers, "x-amzn-requestid") or request_id_from_headers(headers),
        retry_after=parse_retry_after(headers),
        provider_code=name,
    )


def stream_exception(name: str, payload: str) -> tuple[ErrorClass, str]:
    """An exception message inside a ConverseStream: its canonical class and a message with the next step."""
    try:
        body = orjson.loads(payload) if payload else None
    except orjson.JSONDecodeError:
        body = None
    text = body.get("message") if isinstance(body, dict) else None
    message = text if isinstance(text, str) and text else f"{name} inside the stream"
    cls = class_for(name, None, message)
    return cls.error_class, with_hint(cls, f"{name}: {message}")
