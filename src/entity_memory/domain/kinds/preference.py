"""The preference kind: how the user wants things done (communication, analysis, risk,
reporting)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import field_validator

from entity_memory.domain.kind import EntityKind, ImportanceBands, already_said
from entity_memory.domain.llm_item import LlmItem, Phrase, short
from entity_memory.domain.models import (
    BaseEntity,
    CamelModel,
    EntityInputBase,
    Importance,
    ShortText,
)
from entity_memory.domain.vocab import PREFERENCE_CATEGORIES, preference_category
from entity_memory.settings import EnvVar

PreferenceCategory = Literal["communication", "analysis", "risk", "reporting"]
assert PreferenceCategory.__args__ == PREFERENCE_CATEGORIES  # type: ignore[attr-defined]


class PreferenceMetadata(CamelModel):
    category: PreferenceCategory
    value: ShortText
    confidence: Importance = 0.8

    @field_validator("category", mode="before")
    @classmethod
    def _known_category(cls, value: object) -> object:
        """A synonym is stored as its category (`domain.vocab`); an unknown word is refused
        with the list, so the caller can pick one."""
        if not isinstance(value, str):
            return value
        category = preference_category(value)
        if category is None:
            known = ", ".join(PREFERENCE_CATEGORIES)
            raise ValueError(f"unknown preference category {value[:60]!r}; use one of: {known}")
        return category


class PreferenceInput(EntityInputBase):
    type: Literal["preference"]
    metadata: PreferenceMetadata


class PreferenceEntity(BaseEntity):
    type: Literal["preference"] = "preference"
    metadata: PreferenceMetadata


def line_facts(meta: PreferenceMetadata, said: str, _currency: str | None = None) -> str:
    """Its value, where its name or sentence does not already say it."""
    return meta.value if meta.value and not already_said(meta.value, said) else ""


class PreferenceItem(LlmItem):
    """What a typed pass asks of a preference."""

    offered_as: ClassVar[dict[str, str]] = {"value": "preference"}

    category: Literal["communication", "analysis", "risk", "reporting"]
    preference: Phrase

    def fields(self, quote: str) -> tuple[str, str, dict[str, Any]]:
        meta = {"category": self.category, "value": self.preference, "confidence": 0.9}
        return short(self.preference), f'Prefers {self.preference}: "{quote}"', meta


PREFERENCE = EntityKind(
    example_metadata={"category": "communication", "value": "numbers first"},
    ttl_days=180,
    ttl_var=EnvVar.TTL_DAYS_PREFERENCE.value,
    llm_item=PreferenceItem,
    type="preference",
    entity_model=PreferenceEntity,
    input_model=PreferenceInput,
    metadata_model=PreferenceMetadata,
    importance=ImportanceBands(extracted=0.9, detected=0.9),
    label="User Preferences",
    section=0,
    line_facts=line_facts,
    shown_fields=("value",),
    known_facts=("category", "value"),
    offered_fields=("category", "value"),
    always_injected=True,
    resolved_semantically=True,
    llm_max_items=4,
    llm_item_tokens=40,
)
