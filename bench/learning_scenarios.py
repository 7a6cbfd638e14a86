"""Scenarios of the cold-start learning bench: a strong and a cheap model, kinds of task, their mix.

`project` is bench/cases/learning.py's (five kinds, 80 % simple, Claude Opus 4.6 against Haiku 4.5).
`mt-bench` was not written for metis: it replays GPT-4's recorded grades of gpt-4-1106-preview and
Mixtral-8x7B on MT-Bench's 80 questions, both turns (bench/data/, provenance in its README.md).
A JSON file of `Scenario.to_json`'s shape with prompts (`--scenario PATH`) describes any other.
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
MT_BENCH_DATA = Path(__file__).resolve().parent / "data" / "mt-bench-gpt4-mixtral.json"
ACCEPTED_GRADE = 8
"""An MT-Bench answer graded at least this (of 10) counts as a success: below it the judge's
rationales name a mistake (a wrong result, code that fails, an instruction missed)."""
CATEGORY_LEADS = {"writing": "Write", "roleplay": "Answer", "extraction": "Extract", "stem": "Explain",
                  "humanities": "Compare", "coding": "Implement", "reasoning": "Solve", "math": "Calculate"}
"""The verb each MT-Bench question is sent behind: structural fingerprints of the raw questions do
not separate the categories (a neighbourhood holds 28 % of its own category on average, as most
questions open with a verb outside the lexicon); in use an embedding model does that."""


@dataclass(frozen=True)
class Recorded:
    """One recorded question: what the user sent, and whether each model's recorded answer was right."""

    prompt: str
    strong_right: bool
    cheap_right: bool


@dataclass(frozen=True)
class Task:
    prompts: tuple[str, ...]
    output_tokens: int
    strong_success: float
    cheap_success: float
    recorded: tuple[Recorded, ...] = ()
    """Recorded outcomes per prompt: a session on one of these replays its model's recorded verdict."""


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
        """The kind of the prompt in `text` (a request body, where prompts appear JSON-escaped)."""
        return next(k for k, t in self.kinds.items() if any(json.dumps(p)[1:-1] in text for p in t.prompts))

    def recorded_right(self, kind: str, text: str, strong: bool) -> bool | None:
        """The recorded verdict on the prompt in `text` for the strong (or cheap) model; None if unrecorded."""
        for row in self.kinds[kind].recorded:
            if json.dumps(row.prompt)[1:-1] in text:
                return row.strong_right if strong else row.cheap_right
        return None

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


def mt_bench(path: Path = MT_BENCH_DATA) -> Scenario:
    """MT-Bench as recorded: each category a kind (even mix: ten questions, two turns each), each
    question-turn a prompt whose outcome on either model is GPT-4's recorded grade of that model's
    answer (success: at least ACCEPTED_GRADE), output tokens the strong model's mean answer length."""
    data = json.loads(path.read_text())
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in data["questions"]:
        rows.setdefault(row["category"], []).append(row)
    kinds = {}
    for category, group in rows.items():
        recorded = tuple(Recorded(f"{CATEGORY_LEADS[category]} ({category}): {r['prompt']}",
                                  r["strong_score"] >= ACCEPTED_GRADE, r["cheap_score"] >= ACCEPTED_GRADE)
                         for r in group)
        kinds[category] = Task(tuple(r.prompt for r in recorded),
                               round(sum(r["strong_answer_chars"] for r in group) / len(group) / 4),
                               sum(r.strong_right for r in recorded) / len(recorded),
                               sum(r.cheap_right for r in recorded) / len(recorded), recorded)
    return Scenario(
        "mt-bench", "anthropic:claude-opus-4-1", "anthropic:claude-3-haiku-20240307", kinds,
        {k: float(len(v)) for k, v in rows.items()},
        f"Outcomes: GPT-4's recorded 1-10 grades of {data['strong']} and {data['cheap']} on MT-Bench's 80 "
        f"questions, both turns ({data['source']}; bench/data/README.md), success = grade >= {ACCEPTED_GRADE}. "
        "Prices: Claude Opus 4.1 and Claude 3 Haiku stand in for the pair (the bench speaks Anthropic's wire "
        "format), 60x apart per token; the pair's list prices ($10/$30 per million tokens for gpt-4-1106-preview, "
        "about $0.60 for hosted Mixtral 8x7B) are 17x apart for input and 50x for output.")


BUILT_IN = {"project": lambda: PROJECT, "mt-bench": mt_bench}


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or one from a JSON file of `Scenario.to_json`'s shape (with prompts)."""
    if name_or_path in BUILT_IN:
        return BUILT_IN[name_or_path]()
    data = json.loads(Path(name_or_path).read_text())
    kinds = {k: Task(tuple(v["prompts"]), int(v["output_tokens"]), float(v["strong_success"]),
                     float(v["cheap_success"])) for k, v in data["kinds"].items()}
    return Scenario(str(data.get("name", Path(name_or_path).stem)), data["strong"], data["cheap"], kinds,
                    {k: float(v) for k, v in data["mix"].items()}, str(data.get("source", name_or_path)))
