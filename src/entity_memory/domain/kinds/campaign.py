"""The campaign kind: what the agent runs; other kinds link to it by name."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from entity_memory.domain.amounts import amount, plain_number
from entity_memory.domain.kind import EntityKind, ImportanceBands
from entity_memory.domain.llm_item import LlmItem, ShortName
from entity_memory.domain.models import BaseEntity, CamelModel, EntityInputBase, ShortText
from entity_memory.domain.vocab import MONEY_TERMS
from entity_memory.settings import EnvVar

Amount = Annotated[float, Field(ge=0)]


def _optional(description: str) -> Any:  # left out of the stored JSON while unset
    return Field(default=None, description=description, exclude_if=lambda v: v is None)


#: A campaign's budget limits besides its daily budget (its metadata's attributes), as its
#: line names them.
LIMITS = (
    ("monthly_budget", "monthly budget"),
    ("budget_cap", "daily cap"),
    ("budget_floor", "daily floor"),
)


class CampaignMetadata(CamelModel):
    campaign_id: ShortText | None = None
    strategy: ShortText | None = None
    budget: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="the daily budget (a number), not an amount moved"
    )
    status: ShortText | None = None
    #: Limits besides the daily budget (without a place they were put in `budget` or lost).
    monthly_budget: Amount | None = _optional("a monthly budget or monthly spend cap")
    budget_cap: Amount | None = _optional("its daily spending ceiling, if not its budget")
    budget_floor: Amount | None = _optional("the daily budget it must not go below")
    last_performance: dict[ShortText, float] | None = None


class CampaignInput(EntityInputBase):
    type: Literal["campaign"]
    metadata: CampaignMetadata = Field(default_factory=CampaignMetadata)


class CampaignEntity(BaseEntity):
    type: Literal["campaign"] = "campaign"
    metadata: CampaignMetadata = Field(default_factory=CampaignMetadata)


#: Words of a figure's label that make it a share, written with "%" ("CTR 3.1%").
_SHARE_WORDS = frozenset({"rate", "share", "ctr", "cvr", "%"})
#: A ROAS at or above this is written as a percentage (410%), below it as a multiple (4.1x).
_ROAS_AS_PERCENT = 20


def _money(value: float, currency: str | None) -> str:
    """An amount in the user's currency when their stored amounts agree on one (`$140`);
    a plain number otherwise (a sign made up here could be the wrong one)."""
    return amount(value, currency) if currency else plain_number(value)


def _figure(label: str, value: float, currency: str | None) -> str:
    """`CTR 3.1%`, `ROAS 4.35x`, `cost per lead $140`: a share or a ROAS gets its sign from
    its label and size, an amount the user's currency (`_money`)."""
    words = set(re.findall(r"[a-z]+|%", label.lower()))
    if words & _SHARE_WORDS:
        return f"{label.replace('%', '').strip()} {plain_number(value)}%"
    if "roas" in words:
        suffix = "%" if value >= _ROAS_AS_PERCENT else "x"
        return f"{label} {plain_number(value)}{suffix}"
    if words & MONEY_TERMS:
        return f"{label} {_money(value, currency)}"
    return f"{label} {plain_number(value)}"


def line_facts(meta: CampaignMetadata, _said: str, currency: str | None = None) -> str:
    """Its current strategy, budget and status, always (a field changed by any path shows in
    the next block even when `content` still holds an older sentence: issue 22 item 1), and
    its latest figures (`lastPerformance`: kept current with its metrics by the extraction's
    carry stage), which a sentence often leaves out."""
    parts: list[str] = []
    if meta.strategy:
        parts.append(f"strategy {meta.strategy}")
    if meta.budget is not None:
        parts.append(f"budget {_money(meta.budget, currency)}")
    if meta.status:
        parts.append(f"status {meta.status}")
    for attribute, label in LIMITS:
        limit: float | None = getattr(meta, attribute)
        if limit is not None:
            parts.append(f"{label} {_money(limit, currency)}")
    shown = [_figure(k, v, currency) for k, v in (meta.last_performance or {}).items()]
    parts += ["latest " + ", ".join(shown)] if shown else []
    return ", ".join(parts)


class CampaignItem(LlmItem):
    """What a typed pass asks of a campaign."""

    named_by: ClassVar[str | None] = "name"

    name: ShortName
    strategy: ShortName | None = None
    budget: float | None = None
    status: Literal["enabled", "paused", "learning", "removed", "ended"] | None = None

    def fields(self, quote: str) -> tuple[str, str, dict[str, Any]]:
        facts = [f for f in (self.strategy, f"${self.budget:g}/day" if self.budget else None) if f]
        content = f"Campaign {self.name}" + (f": {', '.join(facts)}" if facts else "")
        meta = {"strategy": self.strategy, "budget": self.budget, "status": self.status}
        return self.name.strip(), f'{content}. "{quote}"', meta


CAMPAIGN = EntityKind(
    example_metadata={"status": "enabled", "budget": 100},
    ttl_days=180,
    ttl_var=EnvVar.TTL_DAYS_CAMPAIGN.value,
    llm_item=CampaignItem,
    type="campaign",
    entity_model=CampaignEntity,
    input_model=CampaignInput,
    metadata_model=CampaignMetadata,
    importance=ImportanceBands(extracted=0.7, detected=0.7),
    label="Known Campaigns",
    section=3,
    link_target=True,
    line_facts=line_facts,
    shown_fields=("strategy", "budget", "status", "monthlyBudget", "budgetCap", "budgetFloor"),
    known_facts=("strategy", "budget", "status", "monthlyBudget", "budgetCap", "budgetFloor"),
    offered_fields=("strategy", "budget", "status"),
    llm_max_items=6,
    llm_item_tokens=45,
)
