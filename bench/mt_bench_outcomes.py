"""Derive bench/data/mt-bench-gpt4-mixtral.json from RouteLLM's recorded MT-Bench judgments.

`python -m bench.mt_bench_outcomes JUDGEMENTS QUESTIONS` reads routellm/evals/mt_bench/judgements.jsonl
(GPT-4's 1-10 single-answer grades of gpt-4-1106-preview and Mixtral-8x7B-Instruct on all 80 MT-Bench
questions, both turns) and question.jsonl (their categories), and writes per question and turn: the
category, the user's message, both grades and the answers' lengths. Provenance: bench/data/README.md.
It reads no network; the scenario built from the file is in bench/learning_scenarios.py.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "data" / "mt-bench-gpt4-mixtral.json"
STRONG, CHEAP = "gpt-4-1106-preview", "mistralai/Mixtral-8x7B-Instruct-v0.1"
FIRST_ANSWER = re.compile(r"\[The Start of Assistant's Answer\]\n(.*?)\n\[The End of Assistant's Answer\]", re.S)
LAST_ANSWER = re.compile(r"### Assistant A:\n(.*?)\n\n(?:### User:|<\|The End)", re.S)


def _answer_chars(judgement: dict[str, Any]) -> int:
    prompt = judgement["user_prompt"]
    found = FIRST_ANSWER.findall(prompt) if judgement["turn"] == 1 else LAST_ANSWER.findall(prompt)
    if not found:
        raise ValueError(f"no answer in the judgment of question {judgement['question_id']}, turn "
                         f"{judgement['turn']}")
    return len(found[-1])


def derive(judgements: list[dict[str, Any]], questions: list[dict[str, Any]]) -> dict[str, Any]:
    by_id = {q["question_id"]: q for q in questions}
    grades: dict[tuple[int, int], dict[str, dict[str, int]]] = {}
    for j in judgements:
        key = (j["question_id"], j["turn"])
        grades.setdefault(key, {})[j["model"]] = {"score": int(j["score"]), "answer_chars": _answer_chars(j)}
    rows = []
    for (qid, turn), by_model in sorted(grades.items()):
        if set(by_model) != {STRONG, CHEAP}:
            raise ValueError(f"question {qid}, turn {turn}: judgments for {sorted(by_model)}")
        rows.append({"question_id": qid, "turn": turn, "category": by_id[qid]["category"],
                     "prompt": by_id[qid]["turns"][turn - 1],
                     "strong_score": by_model[STRONG]["score"], "cheap_score": by_model[CHEAP]["score"],
                     "strong_answer_chars": by_model[STRONG]["answer_chars"],
                     "cheap_answer_chars": by_model[CHEAP]["answer_chars"]})
    return {"strong": STRONG, "cheap": CHEAP, "judge": "gpt-4 (single-answer grading, 1-10)",
            "source": "lm-sys/RouteLLM routellm/evals/mt_bench/{judgements,question}.jsonl", "questions": rows}


def main() -> None:
    judgements, questions = (
        [json.loads(line) for line in Path(p).read_text().splitlines() if line.strip()] for p in sys.argv[1:3])
    OUT.write_text(json.dumps(derive(judgements, questions), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
