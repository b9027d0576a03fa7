"""The campaign kind: what the agent runs; other kinds link to it by name."""

from __future__ import annotations

from entity_memory.domain.kind import EntityKind, ImportanceBands
from entity_memory.domain.models import CampaignEntity, CampaignInput, CampaignMetadata

CAMPAIGN = EntityKind(
    type="campaign",
    entity_model=CampaignEntity,
    input_model=CampaignInput,
    metadata_model=CampaignMetadata,
    importance=ImportanceBands(extracted=0.7, detected=0.7),
    label="Known Campaigns",
    section=3,
    shown_fields=("strategy", "budget", "status"),
    known_facts=("strategy", "budget", "status"),
    offered_fields=("strategy", "budget", "status"),
    llm_max_items=6,
    llm_item_tokens=45,
    ttl_days=180,
)
