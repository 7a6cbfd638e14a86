"""What a model call was asked besides its messages, as kept on its llm.call_started (`request_options`).

`request_options_record` turns the caller's AdapterOptions, the names of the tools offered and a
structured turn's output spec and policy into the payload's `RequestOptions` shape, so `metis
replay` can ask the same again. It never keeps a secret: provider-only knobs (`extra`,
`provider_tools`) and settings under secret-like names are named in `omitted` instead, and every
kept string goes through the key scrubber. Reading a record back is the replay layer's business.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import ValidationError

from metis_core.adapters.base import AdapterOptions
from metis_core.events.payloads.llm import RequestOptions
from metis_core.secret_scrub import scrub_secrets

if TYPE_CHECKING:
    from metis_core.structured.policy import OutputPolicy
    from metis_core.structured.spec import OutputSpec

SECRET_NAME = re.compile(r"(?i)key|token|secret|passw|auth|credential|cookie|header|signature")
"""A setting whose name matches is never kept (its value could be a credential)."""
PLAIN_FIELDS = ("max_tokens", "temperature", "top_p", "stop", "reasoning_effort", "thinking_budget_tokens",
                "tool_choice", "parallel_tool_calls", "response_format")  # fmt: skip
"""AdapterOptions fields kept as they are (after scrubbing); the payload names the same fields."""
_VALIDATOR = RequestOptions.__pydantic_validator__


def _scrubbed(value: Any) -> Any:
    """`value` with every string through the key scrubber (a schema's own names stay as they are)."""
    if isinstance(value, dict):
        return {str(key): _scrubbed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(item) for item in value]
    if isinstance(value, str):
        return scrub_secrets(value)
    return value


def _settings(value: Any, path: str, omitted: list[str]) -> Any:
    """Provider settings with secret-named keys dropped (their paths added to `omitted`), scrubbed."""
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            where = f"{path}.{key}"
            if SECRET_NAME.search(str(key)):
                omitted.append(where)
                continue
            kept[str(key)] = _settings(item, where, omitted)
        return kept
    if isinstance(value, (list, tuple)):
        return [_settings(item, path, omitted) for item in value]
    if isinstance(value, str):
        return scrub_secrets(value)
    return value


def request_options_record(
    options: AdapterOptions | None,
    *,
    tools: Sequence[str] = (),
    output: OutputSpec | None = None,
    policy: OutputPolicy | None = None,
) -> dict[str, Any]:
    """The `request_options` payload of the calls of one turn (the same for each of its calls)."""
    omitted: list[str] = []
    record: dict[str, Any] = {}
    if options is not None:
        for name in PLAIN_FIELDS:
            value = getattr(options, name)
            if value is not None:
                record[name] = _scrubbed(value)
        if options.hosted_tools:
            record["hosted_tools"] = _settings(dict(options.hosted_tools), "hosted_tools", omitted)
        if options.extra:
            omitted.append("extra")
        if options.provider_tools:
            omitted.append("provider_tools")
    if tools:
        record["tools"] = list(tools)
    if output is not None:
        from metis_core.structured.policy import OutputPolicy

        chosen = policy or OutputPolicy()
        record["output"] = {
            "name": output.name, "json_schema": _scrubbed(output.schema),
            "description": scrub_secrets(output.description), "max_retries": chosen.max_retries,
            "max_truncation_retries": chosen.max_truncation_retries, "nl_to_format": chosen.nl_to_format,
            "recover": chosen.recover,
        }
    unfit = _unrecordable(record)  # a call_started that fails its catalog check would be dropped whole
    record = {name: value for name, value in record.items() if name not in unfit}
    omitted += unfit
    if omitted:
        record["omitted"] = omitted
    return record


def _unrecordable(record: dict[str, Any]) -> list[str]:
    """The fields the catalog would refuse (not JSON, or not its type: a max_tokens of -1, an unknown
    effort); they are named in `omitted` instead, so the call's llm.call_started is never lost."""
    try:
        _VALIDATOR.validate_json(orjson.dumps(record), strict=True)
        return []
    except (TypeError, ValidationError):
        pass  # find which
    unfit = []
    for name, value in record.items():
        try:
            _VALIDATOR.validate_json(orjson.dumps({name: value}), strict=True)
        except (TypeError, ValidationError):
            unfit.append(name)
    return unfit
