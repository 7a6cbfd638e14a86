"""Chain overhead: a FallbackChain call against calling its first member directly (µs added per call).

Both go through the same ModelClient to the local server with the 40-message conversation on the
Anthropic wire; the first member answers, so the difference is the chain's own bookkeeping
(candidate planning, per-member options, routing record, health). Both answers are checked.
Reported, not judged: the issue sets no target.
"""

from __future__ import annotations

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.routing.fallback import FallbackChain

from bench.context import RunContext
from bench.figures import METIS, Figure, Target
from bench.peers.metis import MODELS, MetisCaller, fields_of, options_for
from bench.scenarios import call_answer, check_answer
from bench.timing import interleaved, median

PROVIDER = "anthropic"


def run(ctx: RunContext) -> list[Figure]:
    sizes = ctx.sizes
    caller = MetisCaller(ctx.server)
    chain = FallbackChain(caller.client, [MODELS[PROVIDER], MODELS["openai"]])
    options = options_for(PROVIDER)
    expected = call_answer()

    def direct() -> object:
        return caller.client.complete(caller.messages, tools=caller.tools, options=options, tool_ids=ToolIdMap())

    def chained() -> object:
        return chain.complete(caller.messages, tools=caller.tools, options=options, tool_ids=ToolIdMap())

    def check(message: object) -> None:
        check_answer("fallback chain", expected, *fields_of(message))  # type: ignore[arg-type]

    try:
        samples = interleaved({"direct": direct, "chain": chained}, {"direct": check, "chain": check},
                              calls=sizes.calls, warmup=sizes.warmup, block=sizes.block)
    finally:
        caller.close()
    added = (median(samples["chain"]) - median(samples["direct"])) * 1e6
    note = f"direct {median(samples['direct']) * 1e6:,.0f} µs, chain {median(samples['chain']) * 1e6:,.0f} µs"
    return [Figure("chain", "fallback chain overhead per call (first member answers)", METIS, added, "µs",
                   len(samples["chain"]), target=Target("report"), note=note)]
