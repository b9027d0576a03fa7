"""The pain point kind: a problem the user has, open until resolved."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from entity_memory.domain.kind import EntityKind, ImportanceBands
from entity_memory.domain.llm_item import LlmItem, ShortName
from entity_memory.domain.models import (
    BaseEntity,
    CamelModel,
    EntityInputBase,
    ShortText,
)
from entity_memory.domain.safe_json import MAX_SAFE_INTEGER
from entity_memory.settings import EnvVar


class PainPointMetadata(CamelModel):
    severity: Literal["low", "medium", "high"] = "medium"
    frequency: Annotated[int, Field(ge=1, le=MAX_SAFE_INTEGER)] = 1
    resolved: bool = False
    related_campaigns: Annotated[list[ShortText], Field(max_length=50)] = Field(
        default_factory=list
    )


class PainPointInput(EntityInputBase):
    type: Literal["pain_point"]
    metadata: PainPointMetadata = Field(default_factory=PainPointMetadata)


class PainPointEntity(BaseEntity):
    type: Literal["pain_point"] = "pain_point"
    metadata: PainPointMetadata = Field(default_factory=PainPointMetadata)


def _severe(fact: object) -> bool:
    return getattr(fact, "severity", None) == "high"


def line_facts(meta: PainPointMetadata, _said: str, _currency: str | None = None) -> str:
    """How often it came back, once it has."""
    return f"seen {meta.frequency} times" if meta.frequency > 1 else ""


def is_resolved(meta: PainPointMetadata) -> bool:
    return meta.resolved


class PainPointItem(LlmItem):
    """What a typed pass asks of a pain point."""

    named_by: ClassVar[str | None] = "problem"

    problem: ShortName
    severity: Literal["low", "medium", "high"] = "medium"

    def fields(self, quote: str) -> tuple[str, str, dict[str, Any]]:
        return self.problem.strip(), f'{self.problem}: "{quote}"', {"severity": self.severity}


PAIN_POINT = EntityKind(
    example_metadata={"severity": "high"},
    ttl_days=180,
    ttl_var=EnvVar.TTL_DAYS_PAIN_POINT.value,
    llm_item=PainPointItem,
    type="pain_point",
    entity_model=PainPointEntity,
    input_model=PainPointInput,
    metadata_model=PainPointMetadata,
    importance=ImportanceBands(extracted=0.8, detected=0.7, detected_marked=0.9, marked=_severe),
    label="Known Pain Points",
    section=1,
    addressed=True,
    line_facts=line_facts,
    resolved=is_resolved,
    member_label="pain point",
    known_facts=("resolved", "severity"),
    offered_fields=("severity",),
    campaign_fields=("related_campaigns",),
    always_injected=True,
    resolved_semantically=True,
    companions=3,
    llm_words=frozenset({"painpoint", "pain"}),
    counts_returns=True,
    llm_max_items=4,
    llm_item_tokens=40,
)
