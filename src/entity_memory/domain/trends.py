"""Cross-session trends from the ledger: is a KPI improving, does a pain point keep coming back.

Direction depends on the KPI: a falling CPA is good news, a falling ROAS is not. A move within
`FLAT_TOLERANCE` of the first value is flat, so noise is not reported as a trend.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from entity_memory.domain.text import tokenize
from entity_memory.domain.vocab import HIGHER_IS_BETTER, LOWER_IS_BETTER

FLAT_TOLERANCE = 0.02

Trend = Literal["improving", "worsening", "flat", "unknown"]


def kpi_polarity(kpi: str) -> int:
    """+1 when higher is better, -1 when lower is better, 0 when unknown."""
    terms = set(tokenize(kpi))
    if terms & LOWER_IS_BETTER:
        return -1
    if terms & HIGHER_IS_BETTER:
        return 1
    return 0


def better_direction(kpi: str) -> Literal["higher", "lower"] | None:
    """Which way is good news for this KPI (None when the vocabulary does not know it)."""
    polarity = kpi_polarity(kpi)
    return "higher" if polarity > 0 else "lower" if polarity < 0 else None


def trend_of(kpi: str, first: float, last: float) -> tuple[str, Trend]:
    """(direction up/down/flat, trend) of a series from its first to its last value."""
    scale = abs(first) or 1.0
    change = (last - first) / scale
    if abs(change) <= FLAT_TOLERANCE:
        return "flat", "flat"
    direction = "up" if change > 0 else "down"
    polarity = kpi_polarity(kpi)
    if polarity == 0:
        return direction, "unknown"
    good = (change > 0) == (polarity > 0)
    return direction, "improving" if good else "worsening"


def metric_trends(observations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary per metric from ledger rows ordered by metric and time."""
    series: dict[str, list[dict[str, Any]]] = {}
    for row in observations:
        series.setdefault(row["metric_id"], []).append(row)
    out = []
    for metric_id, rows in series.items():
        values = [float(r["value"]) for r in rows]
        kpi = rows[-1]["kpi"]
        direction, trend = trend_of(kpi, values[0], values[-1])
        out.append(
            {
                "id": metric_id,
                "kpi": kpi,
                "campaign": rows[-1]["campaign"],
                "unit": rows[-1]["unit"],
                "first": values[0],
                "last": values[-1],
                "min": min(values),
                "max": max(values),
                "observations": len(values),
                "firstAt": rows[0]["observed_at"],
                "lastAt": rows[-1]["observed_at"],
                "direction": direction,
                "trend": trend,
                "better": better_direction(kpi),
            }
        )
    return out


def pain_point_trends(versions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Frequency, first and last seen, and resolution per pain point, from its versions."""
    by_id: dict[str, dict[str, Any]] = {}
    for row in versions:
        item = by_id.setdefault(
            row["entity_id"],
            {"id": row["entity_id"], "firstSeen": row["recorded_at"], "live": True},
        )
        if row["change_kind"] in ("deleted", "expired"):
            item["live"] = False
            continue
        entity = json.loads(row["entity_json"])
        meta = entity.get("metadata", {})
        item.update(
            name=entity["name"],
            lastSeen=row["recorded_at"],
            frequency=meta.get("frequency", 1),
            resolved=meta.get("resolved", False),
            severity=meta.get("severity"),
            live=True,
        )
    return [p for p in by_id.values() if "name" in p]
