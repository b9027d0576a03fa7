"""The compact reply of a typed pass: a few short fields per item, then the SPEC's candidate.

A small model writes every token at a cost, and each key it writes is a chance to wander. A
typed pass asks for one kind only, with just the fields that kind needs (`quote` first, so the
facts follow from the words copied), bounded by `maxLength` and `maxItems`. The pipeline turns
each item into a full candidate: the name, content and importance follow from the fields and
the quote, which becomes the `source` grounding checks.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from entity_memory.domain.kind import kind_of
from entity_memory.extraction.llm.schema import inline_schema

QUOTE_CHARS = 240
NAME_CHARS = 60
PHRASE_CHARS = 120
#: Words of a decision's action kept in its name.
NAME_WORDS = 8

Quote = Annotated[str, Field(max_length=QUOTE_CHARS)]
ShortName = Annotated[str, Field(max_length=NAME_CHARS)]
Phrase = Annotated[str, Field(max_length=PHRASE_CHARS)]


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")
    quote: Quote


class CampaignItem(_Item):
    name: ShortName
    strategy: ShortName | None = None
    budget: float | None = None
    status: Literal["enabled", "paused", "learning", "removed", "ended"] | None = None


class MetricItem(_Item):
    kpi: ShortName
    value: float | None = None
    target: float | None = None
    campaign: ShortName | None = None


class DecisionItem(_Item):
    action: Phrase
    campaign: ShortName | None = None
    #: The pain point it is meant to fix: linked to it when stored (domain/links.py).
    problem: ShortName | None = None


class PainPointItem(_Item):
    problem: ShortName
    severity: Literal["low", "medium", "high"] = "medium"


class PreferenceItem(_Item):
    category: Literal["communication", "analysis", "risk", "reporting"]
    preference: Phrase


ITEM_MODELS: dict[str, type[_Item]] = {
    "campaign": CampaignItem,
    "metric": MetricItem,
    "decision": DecisionItem,
    "pain_point": PainPointItem,
    "preference": PreferenceItem,
}
KINDS: tuple[str, ...] = tuple(ITEM_MODELS)


@lru_cache(maxsize=len(KINDS))
def _schema(kind: str) -> str:
    raw = ITEM_MODELS[kind].model_json_schema()
    item = inline_schema(raw)
    item["additionalProperties"] = False
    item.pop("description", None)
    doc = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "maxItems": kind_of(kind).llm_max_items, "items": item}
        },
        "required": ["items"],
        "additionalProperties": False,
    }
    return json.dumps(doc)


def item_schema(kind: str) -> dict[str, Any]:
    """The JSON schema of one pass's reply `{"items": [...]}` (a fresh copy)."""
    return json.loads(_schema(kind))


def parse_item(kind: str, raw: Any) -> _Item | None:
    if not isinstance(raw, dict):
        return None
    try:
        return ITEM_MODELS[kind].model_validate(raw)
    except ValidationError:
        return None


_UNIT = re.compile(r"(?P<usd>\$)|(?P<pct>%)|(?P<x>\d\s?x\b)")


def _unit(quote: str) -> str | None:
    m = _UNIT.search(quote)
    if m is None:
        return None
    return "USD" if m.group("usd") else "%" if m.group("pct") else "x"


def _short(text: str, words: int = NAME_WORDS) -> str:
    parts = text.strip().rstrip(".").split()
    return " ".join(parts[:words])


def _clean(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if v not in (None, "", [])}


def to_candidate(kind: str, item: _Item) -> dict[str, Any]:
    """A raw candidate in the SPEC's prompt shape (validated and grounded downstream)."""
    quote = item.quote.strip()
    name, content, meta = _fields(kind, item, quote)
    return {
        "type": kind,
        "name": name,
        "content": content,
        # The kind's band, not the model's own guess (that adds tokens and noise).
        "importance": kind_of(kind).importance.extracted,
        "metadata": _clean(meta),
        "source": quote,
    }


def _fields(kind: str, item: Any, quote: str) -> tuple[str, str, dict[str, Any]]:
    if kind == "campaign":
        facts = [f for f in (item.strategy, f"${item.budget:g}/day" if item.budget else None) if f]
        content = f"Campaign {item.name}" + (f": {', '.join(facts)}" if facts else "")
        meta = {"strategy": item.strategy, "budget": item.budget, "status": item.status}
        return item.name.strip(), f'{content}. "{quote}"', meta
    if kind == "metric":
        owner = (item.campaign or "").strip()
        name = f"{owner} {item.kpi}".strip() if owner else item.kpi.strip()
        meta = {
            "kpi": item.kpi,
            "value": item.value,
            "target": item.target,
            "unit": _unit(quote),
            "campaign": owner or None,
        }
        return name, f'{name}: "{quote}"', meta
    if kind == "decision":
        affected = [n for n in (item.campaign, item.problem) if n]
        meta = {"action": item.action, "affectedEntities": affected}
        return _short(item.action), f'Decided: {item.action}. "{quote}"', meta
    if kind == "pain_point":
        return item.problem.strip(), f'{item.problem}: "{quote}"', {"severity": item.severity}
    meta = {"category": item.category, "value": item.preference, "confidence": 0.9}
    return _short(item.preference), f'Prefers {item.preference}: "{quote}"', meta
