"""Structured output: validating (and, when needed, recovering) a 2 KB answer against a pydantic model.

The floor is pydantic's own `Order.model_validate_json` on the same bytes. metis-core's row runs
`validate_answer` (metis_core/structured/validation.py) — the step every structured call takes on
each answer — on an answer that needs no recovery; target <= 2x the floor. Two report
rows show what recovery costs when it is needed: the same answer inside a markdown fence with prose
around it, and with trailing commas that json-repair fixes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from bench.context import RunContext
from bench.figures import METIS, Figure, Target, paired_spread
from bench.scenarios import WrongAnswerError
from bench.timing import median, per_call_batches
from metis_core.structured.spec import output_spec
from metis_core.structured.validation import validate_answer

TARGET = Target("ratio_max", 2.0)
FLOOR_IMPL = "pydantic model_validate_json (floor)"


class Line(BaseModel):
    sku: str
    title: str
    quantity: int
    unit_price: float
    gift: bool


class Order(BaseModel):
    order_id: str
    customer: str
    currency: str
    lines: list[Line]
    notes: str | None = None


def answer_bytes() -> bytes:
    """A 2 KB JSON answer (checked on every run)."""
    lines = [Line(sku=f"SKU-{i:05d}", title=f"Replacement part number {i} for the model X{i % 7}", quantity=i % 5 + 1,
                  unit_price=round(3.5 * i + 0.99, 2), gift=i % 3 == 0) for i in range(17)]
    order = Order(order_id="ord_01J9Z8Y7X6W5V4T3S2R1Q0P", customer="Ada Lovelace", currency="EUR", lines=lines,
                  notes="Leave at the back door.")
    return order.model_dump_json().encode()


def _check(expected: Order) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        found = value[0] if isinstance(value, tuple) else value
        if found != expected:
            raise WrongAnswerError("structured answer did not validate to the expected Order")

    return check


def _pair(ctx: RunContext, row: str, metis: Callable[[], Any], floor: Callable[[], Any],
          check: Callable[[Any], None], target: Target) -> list[Figure]:
    check(metis())
    check(floor())
    number = ctx.sizes.translate_number
    metis_runs: list[float] = []
    floor_runs: list[float] = []
    for _ in range(ctx.sizes.repeats * 3):  # alternate so machine noise lands on both
        floor_runs += per_call_batches(floor, number=number, repeat=1)
        metis_runs += per_call_batches(metis, number=number, repeat=1)
    check(metis())
    floor_value = median(floor_runs) * 1e6
    figures = [Figure("structured", row, FLOOR_IMPL, floor_value, "µs", len(floor_runs), floor=floor_value,
                      is_floor=True),
               Figure("structured", row, METIS, median(metis_runs) * 1e6, "µs", len(metis_runs), floor=floor_value,
                      target=target, spread=paired_spread(metis_runs, floor_runs))]
    return figures


def run(ctx: RunContext) -> list[Figure]:
    data = answer_bytes()
    if not 1900 <= len(data) <= 2200:
        raise WrongAnswerError(f"the structured answer is {len(data)} bytes, not about 2 KB")
    spec = output_spec(Order)
    expected = Order.model_validate_json(data)
    check = _check(expected)
    text = data.decode()
    fenced = f"Here is the order you asked for:\n```json\n{text}\n```\nLet me know if anything is missing."
    damaged = text.replace("}]", "},]").replace('"gift":true}', '"gift":true,}')
    figures = _pair(ctx, f"validate a {len(data):,} B structured answer · no recovery needed",
                    lambda: validate_answer(spec, text), lambda: Order.model_validate_json(data), check, TARGET)
    figures += _pair(ctx, "validate a 2 KB structured answer · markdown fence + prose recovered",
                     lambda: validate_answer(spec, fenced), lambda: Order.model_validate_json(data), check,
                     Target("report"))
    figures += _pair(ctx, "validate a 2 KB structured answer · trailing commas repaired (json-repair)",
                     lambda: validate_answer(spec, damaged), lambda: Order.model_validate_json(data), check,
                     Target("report"))
    return figures
