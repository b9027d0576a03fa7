"""The preference kind: how the user wants things done (communication, analysis, risk,
reporting)."""

from __future__ import annotations

from entity_memory.domain.kind import EntityKind, ImportanceBands
from entity_memory.domain.models import PreferenceEntity, PreferenceInput, PreferenceMetadata

PREFERENCE = EntityKind(
    type="preference",
    entity_model=PreferenceEntity,
    input_model=PreferenceInput,
    metadata_model=PreferenceMetadata,
    importance=ImportanceBands(extracted=0.9, detected=0.9),
    label="User Preferences",
    section=0,
    shown_fields=("value",),
    known_facts=("category", "value"),
    offered_fields=("category", "value"),
    always_injected=True,
    resolved_semantically=True,
    llm_max_items=4,
    llm_item_tokens=40,
    ttl_days=180,
)
