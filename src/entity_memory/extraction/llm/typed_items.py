"""The compact reply of a typed pass: a few short fields per item, then the SPEC's candidate.

A small model writes every token at a cost, and each key it writes is a chance to wander. A
typed pass asks for one kind only, with just the fields that kind needs (`quote` first, so the
facts follow from the words copied), bounded by `maxLength` and `maxItems`. The pipeline turns
each item into a full candidate: the name, content and importance follow from the fields and
the quote, which becomes the `source` grounding checks.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from entity_memory.domain.kind import all_kinds, kind_of
from entity_memory.domain.kinds.campaign import CampaignItem
from entity_memory.domain.kinds.decision import DecisionItem
from entity_memory.domain.kinds.metric import MetricItem
from entity_memory.domain.kinds.pain_point import PainPointItem
from entity_memory.domain.kinds.preference import PreferenceItem
from entity_memory.domain.llm_item import LlmItem
from entity_memory.extraction.llm.schema import inline_schema

#: Each kind's item model, from the kind (domain/kinds/): the kinds a typed pass asks for.
ITEM_MODELS: dict[str, type[LlmItem]] = {
    k.type: k.llm_item for k in all_kinds() if k.llm_item is not None
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


def parse_item(kind: str, raw: Any) -> LlmItem | None:
    if not isinstance(raw, dict):
        return None
    try:
        return ITEM_MODELS[kind].model_validate(raw)
    except ValidationError:
        return None


def _clean(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if v not in (None, "", [])}


def to_candidate(kind: str, item: LlmItem) -> dict[str, Any]:
    """A raw candidate in the SPEC's prompt shape (validated and grounded downstream)."""
    quote = item.quote.strip()
    name, content, meta = item.fields(quote)
    return {
        "type": kind,
        "name": name,
        "content": content,
        # The kind's band, not the model's own guess (that adds tokens and noise).
        "importance": kind_of(kind).importance.extracted,
        "metadata": _clean(meta),
        "source": quote,
    }


__all__ = [
    "KINDS",
    "CampaignItem",
    "DecisionItem",
    "MetricItem",
    "PainPointItem",
    "PreferenceItem",
    "item_schema",
    "parse_item",
    "to_candidate",
]
