"""Chain overhead: a FallbackChain call against calling its first member directly (µs added per call).

Both go through the same ModelClient with the 40-message conversation on the Anthropic wire, over
an in-process httpx MockTransport that returns the server's prebuilt answer: without the socket
round trip's noise, the difference of medians is the chain's own bookkeeping (candidate planning,
per-member options, routing record). The first member answers; both answers are checked.
Reported, not judged: the issue sets no target.
"""

from __future__ import annotations

import httpx

from bench import wire_bodies
from bench.context import RunContext
from bench.figures import METIS, Figure, Target
from bench.peers.metis import MODELS, base_urls, canonical_conversation, canonical_tools, fields_of, options_for
from bench.scenarios import call_answer, check_answer
from bench.timing import interleaved, median
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.client import ModelClient
from metis_core.routing.fallback import FallbackChain
from metis_core.transport.retry import RetryPolicy

PROVIDER = "anthropic"


def run(ctx: RunContext) -> list[Figure]:
    sizes = ctx.sizes
    expected = call_answer()
    body = wire_bodies.anthropic_message(expected)
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    client = ModelClient(http_client=httpx.Client(transport=transport), base_urls=base_urls("http://bench.local"),
                         api_keys={PROVIDER: "sk-bench-not-a-real-key"}, retry=RetryPolicy(max_retries=0))
    chain = FallbackChain(client, [MODELS[PROVIDER], MODELS["openai"]])
    options = options_for(PROVIDER)
    messages, tools = canonical_conversation(), canonical_tools()

    def direct() -> object:
        return client.complete(messages, tools=tools, options=options, tool_ids=ToolIdMap())

    def chained() -> object:
        return chain.complete(messages, tools=tools, options=options, tool_ids=ToolIdMap())

    def check(message: object) -> None:
        check_answer("fallback chain", expected, *fields_of(message))  # type: ignore[arg-type]

    try:
        samples = interleaved({"direct": direct, "chain": chained}, {"direct": check, "chain": check},
                              calls=sizes.calls, warmup=sizes.warmup, block=sizes.block)
    finally:
        client.close()
    added = (median(samples["chain"]) - median(samples["direct"])) * 1e6
    note = f"direct {median(samples['direct']) * 1e6:,.0f} µs, chain {median(samples['chain']) * 1e6:,.0f} µs"
    return [Figure("chain", "fallback chain overhead per call (in-process transport)", METIS, added, "µs",
                   len(samples["chain"]), target=Target("report"), note=note)]
