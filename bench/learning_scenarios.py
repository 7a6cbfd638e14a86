"""Scenarios of the cold-start learning bench: a strong and a cheap model, kinds of task, their mix.

`project` is bench/cases/learning.py's (five kinds, 80 % simple, Claude Opus 4.6 against Haiku 4.5).
`mt-bench` was not written for metis: MT-Bench's eight categories (Zheng et al. 2023, ten questions
each, so an even mix) between a GPT-4-class and a Mixtral-class model, shaped by public figures (see
MT_BENCH). A JSON file of the same shape (`--scenario PATH`) describes any other.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cases.learning import CHEAP, KINDS, MIX, STRONG

TOLERANCE = 0.05
"""A kind suits the cheap model when its success there trails the strong model's by at most this."""


@dataclass(frozen=True)
class Task:
    prompts: tuple[str, ...]
    output_tokens: int
    strong_success: float
    cheap_success: float


@dataclass(frozen=True)
class Scenario:
    name: str
    strong: str
    cheap: str
    kinds: dict[str, Task]
    mix: dict[str, float]
    source: str = ""

    @property
    def suited(self) -> tuple[str, ...]:
        """The kinds the cheap model suits: perfect per-kind routing sends these (and only these) to it."""
        return tuple(k for k, t in self.kinds.items() if t.cheap_success >= t.strong_success - TOLERANCE)

    def kind_of(self, text: str) -> str:
        return next(k for k, t in self.kinds.items() if any(p in text for p in t.prompts))

    def plan(self, count: int, seed: int, *, stratified: bool = True) -> list[tuple[str, str, float]]:
        """(kind, prompt, luck) per session; luck < P(success | model) means the answer is right.
        Stratified: each kind comes up as often as the mix says (largest remainder), in random order;
        otherwise each session draws its kind independently (the mix then varies from seed to seed)."""
        rng = random.Random(seed)
        names, weights = list(self.mix), list(self.mix.values())
        if stratified:
            shares = [count * w / sum(weights) for w in weights]
            counts = [int(x) for x in shares]
            for i in sorted(range(len(names)), key=lambda i: counts[i] - shares[i])[: count - sum(counts)]:
                counts[i] += 1
            kinds = [k for k, n in zip(names, counts, strict=True) for _ in range(n)]
            rng.shuffle(kinds)
        else:
            kinds = rng.choices(names, weights=weights, k=count)
        return [(kind, rng.choice(self.kinds[kind].prompts), rng.random()) for kind in kinds]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "strong": self.strong, "cheap": self.cheap, "mix": self.mix,
                "suited": list(self.suited), "source": self.source,
                "kinds": {k: {"output_tokens": t.output_tokens, "strong_success": t.strong_success,
                              "cheap_success": t.cheap_success} for k, t in self.kinds.items()}}


PROJECT = Scenario("project", STRONG, CHEAP,
                   {k: Task(tuple(p), out, s, c) for k, (p, out, s, c) in KINDS.items()},
                   {k: float(v) for k, v in MIX.items()}, "bench/cases/learning.py")

MT_BENCH = Scenario(
    "mt-bench", "anthropic:claude-opus-4-1", "anthropic:claude-3-haiku-20240307",
    {
        # MT-Bench's categories; success = P(the answer is acceptable to the user) on each model
        "writing": Task(("Write a persuasive email to your manager", "Write a short story opening"), 450, 0.95, 0.93),
        "roleplay": Task(("Answer in character as a ship captain", "Answer as a museum guide would"), 350,
                         0.92, 0.89),
        "extraction": Task(("Extract the dates and amounts from this invoice", "Extract every person named here"),
                           200, 0.95, 0.92),
        "stem": Task(("Describe how a transistor amplifies", "Describe the role of mitochondria"), 400, 0.96, 0.93),
        "humanities": Task(("Compare two theories of justice", "Compare the causes of both world wars"), 450,
                           0.97, 0.94),
        "coding": Task(("Implement an LRU cache in Python", "Implement a parser for dates"), 700, 0.88, 0.62),
        "reasoning": Task(("Solve this logic puzzle about five houses", "Solve the river crossing riddle"), 500,
                          0.85, 0.55),
        "math": Task(("Calculate the area of the circumscribed circle", "Calculate the probability of two sixes"),
                     500, 0.8, 0.45),
    },
    {k: 1.0 for k in ("writing", "roleplay", "extraction", "stem", "humanities", "coding", "reasoning", "math")},
    "MT-Bench categories, even mix (Zheng et al., 2023). Prices: Claude Opus 4.1 against Claude 3 Haiku "
    "(60x per token), the spread RouteLLM's GPT-4 against Mixtral 8x7B had ($24.7 against $0.24 per million "
    "tokens, arXiv 2406.18665). Its best router matched GPT-4's MT-Bench score sending 25-30 % of calls to "
    "GPT-4 (RouteLLM benchmarks README), and the two models score 8.99 and 8.30 overall (LMSYS): so here "
    "five of eight kinds (62.5 %) suit the cheap model, the gap concentrated on coding, reasoning and math. "
    "The per-kind success rates are this bench's assumption within those public figures, not measured.",
)

BUILT_IN = {s.name: s for s in (PROJECT, MT_BENCH)}


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or one from a JSON file of `Scenario.to_json`'s shape (with prompts)."""
    if name_or_path in BUILT_IN:
        return BUILT_IN[name_or_path]
    data = json.loads(Path(name_or_path).read_text())
    kinds = {k: Task(tuple(v["prompts"]), int(v["output_tokens"]), float(v["strong_success"]),
                     float(v["cheap_success"])) for k, v in data["kinds"].items()}
    return Scenario(str(data.get("name", Path(name_or_path).stem)), data["strong"], data["cheap"], kinds,
                    {k: float(v) for k, v in data["mix"].items()}, str(data.get("source", name_or_path)))
