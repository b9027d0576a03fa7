"""The dev set's expected entities stored session by session, as a perfect extractor would.

`bench_retrieval` stores each scenario's final rows at once; a probe that asks how a metric
moved ("since the first quarter") then finds only its last value, because no earlier one was ever
written. Here every session's `expect_entities` are upserted in order, on the clock of that
session, so metrics build their history and entities their versions as with a real
extractor: what the block shows of a trend is measured, not just the last state. A metric's
value (and unit) is read from the first of its facts that states a number; the facts are the
content, as in `bench_retrieval.as_input`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from entity_memory.domain.amounts import CURRENCY_CODES
from entity_memory.domain.kinds import entity_input_adapter
from entity_memory.domain.models import EntityInputBase
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.storage.store import EntityStore

#: The dev set's importance labels as scores (SPEC: high = explicit decisions, critical
#: metrics, stated preferences).
IMPORTANCE = {"high": 0.8, "medium": 0.5, "low": 0.3}
#: "$1,290", "61%", "3.2x", "14": a currency sign, the number, a unit straight after it (never
#: a part of a range such as "10-20").
_NUMBER = re.compile(
    r"(?<![\d.,-])(?P<cur>[$€£])?\s?(?P<num>\d[\d,]*(?:\.\d+)?)(?![\d.])(?P<unit>%|x\b)?"
    r"(?!\s*-\s*\d)"
)


def epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def metric_value(facts: list[str]) -> dict[str, Any]:
    """`value` and `unit` from the first number (not a range) that has a unit (a currency,
    % or x), else the first number: "80 orders; about $12 each" is a $12 cost per order, the
    80 a count beside it."""
    found: list[dict[str, Any]] = []
    for fact in facts:
        for m in _NUMBER.finditer(str(fact)):
            unit = CURRENCY_CODES.get(m.group("cur") or "") or m.group("unit")
            value: dict[str, Any] = {"value": float(m.group("num").replace(",", ""))}
            found.append(value | ({"unit": unit} if unit else {}))
    return next((f for f in found if "unit" in f), found[0] if found else {})


def expected_input(
    row: dict[str, Any], importance: float, with_value: bool = False
) -> EntityInputBase:
    """An expected entity as an upsert item: its name, aliases and facts (the content), and
    with `with_value` a metric's value read from its facts."""
    facts = [str(f) for f in row.get("facts", [])]
    text = "; ".join(facts)
    metric = {"kpi": row["name"], **(metric_value(facts) if with_value else {})}
    metadata: dict[str, Any] = {
        "metric": metric,
        "decision": {"action": row["name"]},
        "preference": {"category": "reporting", "value": text or row["name"]},
    }.get(row["type"], {})
    doc = {
        "type": row["type"],
        "name": row["name"],
        "aliases": [a for a in row.get("aliases", []) if a != row["name"]][:10],
        "content": text,
        "importance": importance,
        "metadata": metadata,
    }
    return entity_input_adapter.validate_python(doc)  # type: ignore[return-value]


def session_input(row: dict[str, Any]) -> EntityInputBase:
    """One session's expected entity, its importance from the set's label."""
    return expected_input(row, IMPORTANCE.get(str(row.get("importance")), 0.5), with_value=True)


async def store_sessions(
    store: EntityStore, clock: Any, user: str, scenario: dict[str, Any]
) -> None:
    """Upsert every session's expected entities in order, `clock.ms` at the session's date."""
    for session in scenario["sessions"]:
        clock.ms = epoch_ms(session["date"])
        items = [session_input(row) for row in session.get("expect_entities", [])]
        if items:
            await upsert_batch(store, user, items, session["session_id"])
