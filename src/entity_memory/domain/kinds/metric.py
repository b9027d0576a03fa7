"""The metric kind: a KPI's value, target and dated series, of one campaign."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from entity_memory.domain.amounts import amount, currency
from entity_memory.domain.kind import EntityKind, ImportanceBands, MeasuredSeries
from entity_memory.domain.llm_item import LlmItem, ShortName, unit_in
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
from entity_memory.domain.task_dates import EARLIEST_DAY, is_real_day, measured_ms, stored_day
from entity_memory.domain.text import tokenize
from entity_memory.domain.trends import trend_of
from entity_memory.settings import EnvVar


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
            if day and day < EARLIEST_DAY:
                raise ValueError(f"observedOn {day!r} is before {EARLIEST_DAY}, the earliest time")
        return self


class MetricEntity(BaseEntity):
    type: Literal["metric"] = "metric"
    metadata: MetricMetadata


#: Observations of a metric's series shown at most: the first (the baseline a "since" question
#: compares with) and the latest ones; those between are elided.
SERIES_SHOWN = 5


def _dated(history: list[MetricObservation]) -> list[tuple[float, str | None]]:
    """A metric's observations as (value, date), in the order measured (`measured_ms`, as the
    store keeps them; history written by older versions was kept in the order told): the date
    it was measured where the conversation said (`observedOn`), else the day it was written."""
    kept = sorted(history, key=lambda h: measured_ms(h.observed_on, h.at))
    return [(h.value, h.observed_on or stored_day(h.at)) for h in kept]


def _series(values: list[tuple[float, str | None]], kpi: str, unit: str | None) -> str:
    """`$31 (2026-01-06) -> $38 (2026-02-10) -> $27 (2026-06-09) improving`: the dated
    observations (first and latest, SERIES_SHOWN at most), then the direction."""
    if len(values) < 2:
        return ""
    shown = [
        f"{amount(value, unit)} ({day})" if day else amount(value, unit) for value, day in values
    ]
    if len(shown) > SERIES_SHOWN:
        shown = [shown[0], "...", *shown[-(SERIES_SHOWN - 1) :]]
    _, trend = trend_of(kpi, values[0][0], values[-1][0])
    arrow = " -> ".join(shown)
    return arrow if trend == "unknown" else f"{arrow} {trend}"


def currency_of(meta: MetricMetadata) -> str | None:
    """The currency its value is in, when its unit is one."""
    return currency(meta.unit)


def line_facts(meta: MetricMetadata, _said: str = "", _currency: str | None = None) -> str:
    """`target $35; $52 (2026-04-06) -> $41 (2026-05-12) improving` from what the metric
    holds; `value $41` too when there is no series, or when the value is not its last
    observation (a client write that set `value` alone)."""
    unit = meta.unit or None
    values = _dated(meta.history)
    series = _series(values, meta.kpi, unit)
    parts = []
    value = meta.value
    if value is not None and not (series and values[-1][0] == value):
        parts.append(f"value {amount(value, unit)}")
    if meta.target is not None:
        parts.append(f"target {amount(meta.target, unit)}")
    return "; ".join(p for p in (", ".join(parts), series) if p)


def measured_series(meta: MetricMetadata) -> MeasuredSeries:
    """Its observations as (when measured, value), oldest first: a value told after a
    decision about a day before it is no outcome of it."""
    points = sorted((measured_ms(h.observed_on, h.at), h.value) for h in meta.history)
    return MeasuredSeries(meta.campaign or None, meta.kpi, meta.unit or None, tuple(points))


def campaign_of(meta: MetricMetadata) -> str | None:
    return meta.campaign


def _has_target(fact: object) -> bool:
    return getattr(fact, "target", None) is not None


class MetricItem(LlmItem):
    """What a typed pass asks of a metric."""

    kpi: ShortName
    value: float | None = None
    target: float | None = None
    campaign: ShortName | None = None

    def fields(self, quote: str) -> tuple[str, str, dict[str, Any]]:
        owner = (self.campaign or "").strip()
        name = f"{owner} {self.kpi}".strip() if owner else self.kpi.strip()
        meta = {
            "kpi": self.kpi,
            "value": self.value,
            "target": self.target,
            "unit": unit_in(quote),
            "campaign": owner or None,
        }
        return name, f'{name}: "{quote}"', meta


METRIC = EntityKind(
    example_metadata={"kpi": "CPA", "value": 40, "unit": "USD"},
    # As long as its campaign and as long as recency still ranks it (180 days), not the SPEC's
    # example of 30: each write refreshes the TTL, so at 30 days a metric the client did not
    # mention for a month vanished with its history, and "is CPA lower than in the first
    # quarter?" found nothing to compare (the SPEC's use case of cross-session trends).
    # Measured on the dev sessions stored in turn (bench_retrieval, hybrid, probes in date
    # order): hit@10 0.783 -> 0.855, context contains 0.761 -> 0.848. Old values still rank
    # lower by recency, and the block dates each one.
    ttl_days=180,
    ttl_var=EnvVar.TTL_DAYS_METRIC.value,
    llm_item=MetricItem,
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
    line_facts=line_facts,
    facts_after_sentence=True,
    line_campaign=campaign_of,
    member_label="metric",
    shown_fields=("value", "target"),
    currency=currency_of,
    known_facts=("kpi", "value", "target", "unit", "campaign"),
    offered_fields=("kpi", "value", "target", "campaign"),
    server_fields=frozenset({"history"}),
    campaign_fields=("campaign",),
    companions=5,
    llm_words=frozenset({"kpi"}),
    task_words=frozenset(tokenize("performance numbers figures results stats kpi kpis metrics")),
    series=measured_series,
    llm_max_items=8,
    llm_item_tokens=50,
)
