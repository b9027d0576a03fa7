"""The decision kind: what was decided, why, and on which campaigns and pain points."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from entity_memory.domain.kind import EntityKind, ImportanceBands, already_said
from entity_memory.domain.llm_item import LlmItem, Phrase, ShortName, short
from entity_memory.domain.models import BaseEntity, CamelModel, EntityInputBase, ShortText
from entity_memory.settings import EnvVar


class DecisionMetadata(CamelModel):
    action: ShortText
    rationale: Annotated[str, Field(max_length=2000)] = ""
    affected_entities: Annotated[list[ShortText], Field(max_length=50)] = Field(
        default_factory=list,
        description="names of the campaigns it changes and of the pain point it is meant to fix",
    )
    reversible: bool = True
    #: Where the decision stands, apart from what came of it (`outcome`).
    status: Literal["accepted", "done", "reverted"] | None = Field(
        default=None,
        description="accepted (agreed, not yet carried out), done (carried out), reverted",
        exclude_if=lambda v: v is None,
    )
    outcome: ShortText | None = Field(default=None, description="what came of it, once known")


class DecisionInput(EntityInputBase):
    type: Literal["decision"]
    metadata: DecisionMetadata


class DecisionEntity(BaseEntity):
    type: Literal["decision"] = "decision"
    metadata: DecisionMetadata


def _accepted(fact: object) -> bool:
    return bool(getattr(fact, "accepted", False))


def line_facts(meta: DecisionMetadata, said: str, _currency: str | None = None) -> str:
    """Its action and outcome, where its name or sentence does not already say them."""
    parts = []
    shown = (("action", meta.action), ("status", meta.status), ("outcome", meta.outcome))
    for field, value in shown:
        if value and not already_said(value, said):
            parts.append(f"{field} {value}")
    return ", ".join(parts)


class DecisionItem(LlmItem):
    """What a typed pass asks of a decision."""

    action: Phrase
    campaign: ShortName | None = None
    #: The pain point it is meant to fix: linked to it when stored (domain/links.py).
    problem: ShortName | None = None

    def fields(self, quote: str) -> tuple[str, str, dict[str, Any]]:
        affected = [n for n in (self.campaign, self.problem) if n]
        meta = {"action": self.action, "affectedEntities": affected}
        return short(self.action), f'Decided: {self.action}. "{quote}"', meta


DECISION = EntityKind(
    example_metadata={"action": "pause display"},
    # Kept longer than the others, for audit (SPEC best practice 5).
    ttl_days=365,
    ttl_var=EnvVar.TTL_DAYS_DECISION.value,
    llm_item=DecisionItem,
    type="decision",
    entity_model=DecisionEntity,
    input_model=DecisionInput,
    metadata_model=DecisionMetadata,
    # An explicit decision ranks above a proposal the user only accepted.
    importance=ImportanceBands(extracted=0.9, detected=0.9, detected_marked=0.85, marked=_accepted),
    label="Prior Decisions",
    section=2,
    line_facts=line_facts,
    shows_outcome=True,
    member_label="decision",
    shown_fields=("action", "status", "outcome"),
    known_facts=("action", "status", "outcome"),
    offered_fields=("action",),
    campaign_fields=("affected_entities",),
    addresses_pain_points=True,
    companions=3,
    companions_newest=True,
    llm_max_items=5,
    llm_item_tokens=55,
)
