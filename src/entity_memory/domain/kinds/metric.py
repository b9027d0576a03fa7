"""The metric kind: a KPI's value, target and dated series, of one campaign."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from entity_memory.domain.kind import EntityKind, ImportanceBands
from entity_memory.domain.models import (
    METRIC_HISTORY_LIMIT,
    BaseEntity,
    CamelModel,
    EntityInputBase,
    EpochMs,
    IsoDate,
    SafeCount,
    ShortText,
)
from entity_memory.domain.task_dates import is_real_day


class MetricObservation(CamelModel):
    value: float
    at: SafeCount = Field(description="epoch milliseconds")
    session_id: str | None = None
    #: When the value was measured, where the conversation said (else `at` is the best date).
    observed_on: IsoDate | None = Field(default=None, exclude_if=lambda v: v is None)


class MetricMetadata(CamelModel):
    """The SPEC leaves metrics untyped; a KPI is only useful with its value, unit and owner."""

    kpi: ShortText = Field(description="CPA, ROAS, CTR, CPC, CPM, conversion rate, ...")
    value: float | None = Field(default=None, description="the measured value, never a goal")
    target: float | None = Field(
        default=None, description="the goal for this KPI", exclude_if=lambda v: v is None
    )
    unit: ShortText | None = Field(default=None, description="USD, %, x, ...")
    campaign: ShortText | None = Field(default=None, description="the campaign it belongs to")
    observed_on: IsoDate | None = Field(
        default=None, description="when the value was measured", exclude_if=lambda v: v is None
    )
    history: Annotated[list[MetricObservation], Field(max_length=METRIC_HISTORY_LIMIT)] = Field(
        default_factory=list
    )


class MetricObservationInput(MetricObservation):
    """An observation as a client sends it: its `at` must be a real time (stored ones keep
    what older versions accepted)."""

    at: EpochMs = Field(description="epoch milliseconds")


class MetricMetadataInput(MetricMetadata):
    history: Annotated[list[MetricObservationInput], Field(max_length=METRIC_HISTORY_LIMIT)] = (
        Field(default_factory=list)
    )


class MetricInput(EntityInputBase):
    type: Literal["metric"]
    metadata: MetricMetadataInput

    @model_validator(mode="after")
    def _real_days(self) -> MetricInput:
        """A day that does not exist ("2026-02-31") would reach the agent's prompt and take
        the place of real ones in the entry's `days`: refused as sent (stored documents keep
        what older versions accepted)."""
        meta = self.metadata
        for day in (meta.observed_on, *(h.observed_on for h in meta.history)):
            if day and not is_real_day(day):
                raise ValueError(f"observedOn {day!r} is not a real day (YYYY-MM-DD)")
        return self


class MetricEntity(BaseEntity):
    type: Literal["metric"] = "metric"
    metadata: MetricMetadata


def _has_target(fact: object) -> bool:
    return getattr(fact, "target", None) is not None


METRIC = EntityKind(
    type="metric",
    entity_model=MetricEntity,
    input_model=MetricInput,
    metadata_model=MetricMetadata,
    # A metric with a stated goal is one the user is steering by.
    importance=ImportanceBands(
        extracted=0.8, detected=0.7, detected_marked=0.8, marked=_has_target
    ),
    label="Historical Metrics",
    section=4,
    member_label="metric",
    shown_fields=("value", "target"),
    known_facts=("kpi", "value", "target", "unit", "campaign"),
    offered_fields=("kpi", "value", "target", "campaign"),
    server_fields=frozenset({"history"}),
    campaign_fields=("campaign",),
    companions=5,
    llm_words=frozenset({"kpi"}),
    keeps_series=True,
    llm_max_items=8,
    llm_item_tokens=50,
    ttl_days=180,
)
