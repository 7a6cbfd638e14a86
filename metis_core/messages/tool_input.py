"""Validation of a tool_use input against its tool's schema, listing every violation (§5.2.4).

The violations feed the `tool.input_invalid` event and the error tool_result the model sees, so
each names its JSON path. Validators are compiled once per schema and cached, since dispatch
validates every call. Formats are checked with the standard library only. This module does not
check that a schema is inside the portable subset (tool_schema.py does that at definition time).
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from datetime import date, datetime, time
from functools import lru_cache
from typing import Any

import orjson
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from metis_core.errors import ToolInputInvalidError
from metis_core.messages.tool_schema import child_path
from metis_core.messages.tools import ToolDefinition

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_TIME = re.compile(r"^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_DURATION = re.compile(
    r"^P(?!$)(\d+(\.\d+)?Y)?(\d+(\.\d+)?M)?(\d+(\.\d+)?W)?(\d+(\.\d+)?D)?"
    r"(T(?=\d)(\d+(\.\d+)?H)?(\d+(\.\d+)?M)?(\d+(\.\d+)?S)?)?$"
)

FORMAT_CHECKER = FormatChecker(formats=())


def _parses(parse: Any, pattern: re.Pattern[str], value: str) -> bool:
    if not pattern.match(value):
        return False
    try:
        parse(value.replace("z", "Z"))
    except ValueError:
        return False
    return True


def _check_ip(version: int, value: str) -> bool:
    try:
        return ipaddress.ip_address(value).version == version
    except ValueError:
        return False


def _check_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return len(value.replace("-", "")) == 32


_FORMAT_TESTS: dict[str, Any] = {
    "date": lambda v: _parses(date.fromisoformat, _DATE, v),
    "date-time": lambda v: _parses(datetime.fromisoformat, _DATE_TIME, v),
    "time": lambda v: _parses(time.fromisoformat, _TIME, v),
    "email": lambda v: bool(_EMAIL.match(v)),
    "hostname": lambda v: bool(_HOSTNAME.match(v)),
    "duration": lambda v: bool(_DURATION.match(v)),
    "ipv4": lambda v: _check_ip(4, v),
    "ipv6": lambda v: _check_ip(6, v),
    "uuid": _check_uuid,
}
for _name, _test in _FORMAT_TESTS.items():
    # Non-strings pass format checks (JSON Schema semantics); `type` catches them.
    FORMAT_CHECKER.checks(_name)(lambda v, _t=_test: not isinstance(v, str) or bool(_t(v)))


@lru_cache(maxsize=1024)
def _compiled_validator(schema_json: bytes) -> Draft202012Validator:
    return Draft202012Validator(orjson.loads(schema_json), format_checker=FORMAT_CHECKER)


def validator_for(tool: ToolDefinition) -> Draft202012Validator:
    """The compiled validator for a tool's schema; compiled once per distinct schema."""
    # Keyed by content, not identity: a tool rebuilt each turn, or a schema mutated in place,
    # still gets the right validator. Serializing a small schema costs about a microsecond.
    return _compiled_validator(orjson.dumps(tool.input_schema, option=orjson.OPT_SORT_KEYS))


def _error_path(error: ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path = f"{path}[{part}]" if isinstance(part, int) else child_path(path, str(part))
    return path


def tool_input_violations(tool: ToolDefinition, tool_input: Any) -> list[str]:
    """Every violation of `tool_input` against the tool's schema, as `<json path>: <message>`."""
    errors = validator_for(tool).iter_errors(tool_input)
    ordered = sorted(errors, key=lambda e: (_error_path(e), e.message))
    return [f"{_error_path(e)}: {e.message}" for e in ordered]


def validate_tool_input(tool: ToolDefinition, tool_input: Any) -> None:
    """Raise ToolInputInvalidError listing every violation; return None when the input is valid."""
    violations = tool_input_violations(tool, tool_input)
    if violations:
        raise ToolInputInvalidError(tool.name, violations)
