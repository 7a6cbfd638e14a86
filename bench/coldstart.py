"""Run in a fresh interpreter: time one implementation's imports, then set up a client, call once, read RSS.

`python -m bench.coldstart <impl> <server> <expected text>` prints one JSON line:
{"import_ms": ..., "first_answer_ms": ..., "rss_mb": ..., "cpu_import_ms": ..., "cpu_call_ms": ...};
first_answer_ms runs from the first import to the checked answer (imports, client setup, one call),
what a CLI user waits for; the cpu_ figures split the process's CPU time into imports and first call. Only
`sys` and `time` are imported before the clock starts, and nothing of the suite after it, so the
figures are the library's own. `floor+pydantic` is the floor plus pydantic's import and first
model: the least any client whose types are pydantic models can cost. The one call goes to the
local server (Anthropic wire; OpenAI for the openai SDK) and its text is checked, so lazily
loaded parts (price table, adapters) count in the memory figure as they would in real use.
"""

import sys
import time

KEY = "sk-bench-not-a-real-key"
PROMPT = "Say hello."


def _import(impl: str) -> None:
    if impl in ("floor", "floor+pydantic"):
        import httpx  # noqa: F401
        import orjson  # noqa: F401

        if impl == "floor+pydantic":
            from pydantic import BaseModel

            class Answer(BaseModel):  # the first model: pydantic builds its schema machinery here
                text: str
    elif impl == "metis":
        import metis_core.adapters.anthropic.adapter
        import metis_core.adapters.client
        import metis_core.adapters.openai_chat.adapter  # noqa: F401
    elif impl == "openai":
        import openai  # noqa: F401
    elif impl == "anthropic":
        import anthropic  # noqa: F401
    elif impl == "litellm":
        import litellm  # noqa: F401
    elif impl == "pydantic-ai":
        import pydantic_ai.direct
        import pydantic_ai.models.anthropic
        import pydantic_ai.models.openai  # noqa: F401
    else:
        raise SystemExit(f"unknown implementation {impl!r}")


def _call(impl: str, server: str) -> str:
    """Set up the client and make one non-streaming call; returns the answer's text."""
    if impl in ("floor", "floor+pydantic"):
        import httpx
        import orjson

        body = orjson.dumps({"model": "claude-sonnet-4-5", "max_tokens": 64,
                             "messages": [{"role": "user", "content": PROMPT}]})
        with httpx.Client() as client:
            response = client.post(f"{server}/v1/messages", content=body,
                                   headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"})
        return orjson.loads(response.content)["content"][0]["text"]
    if impl == "metis":
        from metis_core.adapters.base import AdapterOptions
        from metis_core.adapters.client import ModelClient
        from metis_core.messages import user_message

        client = ModelClient(base_urls={"anthropic": server}, api_keys={"anthropic": KEY})
        options = AdapterOptions(model="anthropic:claude-sonnet-4-5", max_tokens=64)
        return client.complete([user_message(PROMPT)], options=options).text()
    if impl == "openai":
        import openai

        completion = openai.OpenAI(base_url=f"{server}/v1", api_key=KEY).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": PROMPT}], max_completion_tokens=64)
        return completion.choices[0].message.content or ""
    if impl == "anthropic":
        import anthropic

        message = anthropic.Anthropic(base_url=server, api_key=KEY).messages.create(
            model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": PROMPT}])
        return "".join(block.text for block in message.content if block.type == "text")
    if impl == "litellm":
        import litellm

        response = litellm.completion(model="anthropic/claude-sonnet-4-5", api_base=server, api_key=KEY,
                                      max_tokens=64, messages=[{"role": "user", "content": PROMPT}])
        return response.choices[0].message.content or ""
    from pydantic_ai import ModelRequest
    from pydantic_ai.direct import model_request_sync
    from pydantic_ai.messages import TextPart
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    model = AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(base_url=server, api_key=KEY))
    answer = model_request_sync(
        model, [ModelRequest.user_text_prompt(PROMPT)], model_settings={"max_tokens": 64}
    )
    return "".join(part.content for part in answer.parts if isinstance(part, TextPart))


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    impl, server, expected = sys.argv[1], sys.argv[2], sys.argv[3]
    start, cpu_start = time.perf_counter(), time.process_time()
    _import(impl)
    import_ms, cpu_imported = (time.perf_counter() - start) * 1000, time.process_time()
    text = _call(impl, server)
    first_answer_ms, cpu_answered = (time.perf_counter() - start) * 1000, time.process_time()
    if text != expected:
        raise SystemExit(f"{impl}: wrong answer {text[:80]!r}")
    cpu_import_ms, cpu_call_ms = (cpu_imported - cpu_start) * 1000, (cpu_answered - cpu_imported) * 1000
    print(f'{{"import_ms": {import_ms:.3f}, "first_answer_ms": {first_answer_ms:.3f}, "rss_mb": {_rss_mb():.3f}, '
          f'"cpu_import_ms": {cpu_import_ms:.3f}, "cpu_call_ms": {cpu_call_ms:.3f}}}')


if __name__ == "__main__":
    main()
