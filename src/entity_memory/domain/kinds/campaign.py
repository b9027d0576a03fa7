"""The campaign kind: what the agent runs; other kinds link to it by name."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from entity_memory.domain.kind import EntityKind, ImportanceBands
from entity_memory.domain.models import BaseEntity, CamelModel, EntityInputBase, ShortText


class CampaignMetadata(CamelModel):
    campaign_id: ShortText | None = None
    strategy: ShortText | None = None
    budget: Annotated[float, Field(ge=0)] | None = None
    status: ShortText | None = None
    last_performance: dict[ShortText, float] | None = None


class CampaignInput(EntityInputBase):
    type: Literal["campaign"]
    metadata: CampaignMetadata = Field(default_factory=CampaignMetadata)


class CampaignEntity(BaseEntity):
    type: Literal["campaign"] = "campaign"
    metadata: CampaignMetadata = Field(default_factory=CampaignMetadata)


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
