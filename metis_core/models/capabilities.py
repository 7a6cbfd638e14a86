"""What a model can carry (§7.2): the substitutability boundary for routing and swaps.

Declarations are honest: a feature the adapter does not expose is declared False even where the
model has it. Values come from the model registry (data/models.yaml) plus user overrides.
"""

from typing import Any, Final, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict


class AdapterCapabilities(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    supports_thinking: bool = False
    supports_images: bool = False
    supports_tools: bool = True
    supports_system_prompt: bool = True
    supports_structured_output: bool = False
    structured_output_mode: Literal["", "json_schema", "tool", "instructions"] = ""
    """How a schema travels (docs/structured-output.md): "json_schema" (the API constrains decoding),
    "tool" (one forced tool whose input is the answer) or "instructions" (prompt, then validation).
    Empty: "json_schema" when supports_structured_output, else "tool" when tools are supported."""
    supports_streaming: bool = True
    supports_streaming_tool_calls: bool = True
    supports_parallel_tool_calls: bool = True
    supports_prompt_caching: bool = False
    supports_system_messages_in_list: bool = True
    max_context_tokens: int = 8_192
    max_output_tokens: int = 4_096
    accepted_image_media_types: tuple[str, ...] = ()
    hosted_tools: tuple[str, ...] = ()
    """Provider-hosted tools the model runs itself and the adapter can enable: `web_search`,
    `web_fetch`, `code_execution` (Anthropic), `web_search`, `file_search` (OpenAI Responses)."""

    # Wire quirks of OpenAI-compatible servers (docs/adapters.md). Defaults match OpenAI itself.
    tool_id_style: str = "default"
    native_compaction: str = ""
    """The provider's own compaction this model accepts (Anthropic `compact_20260112`); "" when none."""
    """"default" (provider rules), or "alnum9" for servers that need exactly 9 alphanumerics."""
    supports_stream_usage: bool = True
    """False for servers that reject `stream_options.include_usage`."""
    supports_developer_role: bool = False
    max_tokens_field: str = "max_tokens"
    """"max_tokens" or "max_completion_tokens"."""

    @property
    def output_mode(self) -> str:
        """structured_output_mode with the empty default resolved."""
        if self.structured_output_mode:
            return self.structured_output_mode
        if self.supports_structured_output:
            return "json_schema"
        return "tool" if self.supports_tools else "instructions"


def _exact_kind(annotation: Any) -> type | frozenset[str] | None:
    """What a field's value must be to need no validation: its type, or a Literal's values; None: always validate."""
    if annotation in (bool, int, str):
        return annotation  # type: ignore[no-any-return]
    if get_origin(annotation) is Literal:
        return frozenset(get_args(annotation))
    return tuple if annotation == tuple[str, ...] else None


_KINDS: Final = {name: _exact_kind(info.annotation) for name, info in AdapterCapabilities.model_fields.items()}


def capabilities_from(fields: dict[str, Any]) -> AdapterCapabilities:
    """`AdapterCapabilities.model_validate(fields)`. When every value already has its field's exact type (what
    models.yaml and config entries hold once their check passed), the instance is made without pydantic's
    validator, so a first call builds no schema at all (~1.8 MB of RSS); anything else is validated."""
    exact: dict[str, Any] = {}
    for name, value in fields.items():
        kind = _KINDS.get(name)
        if kind is tuple:
            if type(value) not in (list, tuple) or not all(type(item) is str for item in value):
                return AdapterCapabilities.model_validate(fields)
            value = tuple(value)
        elif not (type(value) is kind or (type(kind) is frozenset and type(value) is str and value in kind)):
            return AdapterCapabilities.model_validate(fields)
        exact[name] = value
    return AdapterCapabilities.model_construct(**exact)
