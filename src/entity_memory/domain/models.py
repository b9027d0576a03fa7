"""Pydantic schemas: the five entity types as stored, what clients send, and the index.

Stored JSON uses the SPEC's camelCase names (`userId`, `createdAt`, ...) and epoch
milliseconds. Inputs are strict (`extra="forbid"`): a misspelt field is an error the caller
sees, not data silently dropped. Server-owned fields (`userId`, `version`, timestamps) are
never taken from input.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from entity_memory.domain.keys import ENTITY_TYPES, validate_id
from entity_memory.domain.safe_json import MAX_SAFE_INTEGER
from entity_memory.domain.task_dates import (
    EARLIEST_DAY,
    MAX_EPOCH_MS,
    MIN_EPOCH_MS,
    is_real_day,
)
from entity_memory.domain.vocab import PREFERENCE_CATEGORIES, preference_category

EntityType = Literal["campaign", "metric", "decision", "pain_point", "preference"]
assert set(EntityType.__args__) == set(ENTITY_TYPES)  # type: ignore[attr-defined]
PreferenceCategory = Literal["communication", "analysis", "risk", "reporting"]
assert PreferenceCategory.__args__ == PREFERENCE_CATEGORIES  # type: ignore[attr-defined]

MAX_NAME_LENGTH = 200
MAX_CONTENT_LENGTH = 4000
MAX_ALIASES = 20
#: Observations a metric keeps in KV; the full series lives in the ledger.
METRIC_HISTORY_LIMIT = 20
#: Provenance entries an entity keeps (the first and the newest); every version is in the ledger.
PROVENANCE_LIMIT = 10
MAX_EXCERPT_LENGTH = 500

Importance = Annotated[float, Field(ge=0.0, le=1.0)]
#: Times, counters and versions: exact in JSON, JavaScript, KV metadata and D1 (<= 2^53), so
#: nothing is stored that a later read cannot parse back.
SafeCount = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]


def _in_milliseconds(ms: int) -> int:
    """A time in seconds passes as milliseconds in 1970: refused with what it probably is."""
    if ms < MIN_EPOCH_MS:
        raise ValueError(f"{ms} is before 2000: times are epoch milliseconds (seconds given?)")
    return ms


#: A time a client states (epoch milliseconds): an integer (not `true`, not a numeric string)
#: with a calendar date, from 2000 on (the schema says so; the validator says why).
EpochMs = Annotated[
    int,
    Field(strict=True, le=MAX_EPOCH_MS, json_schema_extra={"minimum": MIN_EPOCH_MS}),
    AfterValidator(_in_milliseconds),
]
ShortText = Annotated[str, Field(max_length=500)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_LENGTH)]


class CamelModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=True,
        allow_inf_nan=False,  # JSON has no NaN; a stored NaN would become null
    )

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


# --- per-type metadata -------------------------------------------------------------------------


class CampaignMetadata(CamelModel):
    campaign_id: ShortText | None = None
    strategy: ShortText | None = None
    budget: Annotated[float, Field(ge=0)] | None = None
    status: ShortText | None = None
    last_performance: dict[ShortText, float] | None = None


IsoDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD")]


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


class DecisionMetadata(CamelModel):
    action: ShortText
    rationale: Annotated[str, Field(max_length=2000)] = ""
    affected_entities: Annotated[list[ShortText], Field(max_length=50)] = Field(
        default_factory=list,
        description="names of the campaigns it changes and of the pain point it is meant to fix",
    )
    reversible: bool = True
    outcome: ShortText | None = None


class PainPointMetadata(CamelModel):
    severity: Literal["low", "medium", "high"] = "medium"
    frequency: SafeCount = Field(default=1, ge=1)
    resolved: bool = False
    related_campaigns: Annotated[list[ShortText], Field(max_length=50)] = Field(
        default_factory=list
    )


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


METADATA_MODELS: dict[str, type[CamelModel]] = {
    "campaign": CampaignMetadata,
    "metric": MetricMetadata,
    "decision": DecisionMetadata,
    "pain_point": PainPointMetadata,
    "preference": PreferenceMetadata,
}

# --- provenance --------------------------------------------------------------------------------


class Provenance(CamelModel):
    """Where a fact came from: the words that support it, the session, when, and who read it."""

    excerpt: Annotated[str, Field(max_length=MAX_EXCERPT_LENGTH)] = ""
    session_id: str | None = None
    at: SafeCount | None = Field(default=None, description="epoch milliseconds")
    #: rules | workers-ai | openai, or "api" for a client's own write (an agent's `remember`).
    extractor: ShortText | None = None


# --- what clients send -------------------------------------------------------------------------


class ProvenanceInput(Provenance):
    """Provenance as a client sends it: its `at` must be a real time (stored entries keep
    what older versions accepted)."""

    at: EpochMs | None = Field(default=None, description="epoch milliseconds")


class EntityInputBase(CamelModel):
    id: str | None = Field(default=None, description="defaults to a slug of the name")
    name: Name
    content: Annotated[str, Field(max_length=MAX_CONTENT_LENGTH)] = ""
    importance: Importance = 0.5
    aliases: Annotated[list[Name], Field(max_length=MAX_ALIASES)] = Field(default_factory=list)
    #: The excerpt this fact comes from (what an extractor quotes); stored as provenance.
    source: Annotated[str, Field(max_length=MAX_EXCERPT_LENGTH)] | None = None
    #: Full provenance entries, for clients that have them (session and time default to the
    #: write's own).
    provenance: Annotated[list[ProvenanceInput], Field(max_length=PROVENANCE_LIMIT)] = Field(
        default_factory=list
    )

    @field_validator("source", mode="before")
    @classmethod
    def _short_source(cls, value: object) -> object:
        """An over-long quote is cut, not a reason to lose the fact."""
        if isinstance(value, str) and len(value) > MAX_EXCERPT_LENGTH:
            return value[: MAX_EXCERPT_LENGTH - 3] + "..."
        return value

    @field_validator("id")
    @classmethod
    def _safe_id(cls, value: str | None) -> str | None:
        return None if value is None else validate_id(value, "entity")

    @field_validator("name")
    @classmethod
    def _visible_name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("name must not be blank")
        return value.strip()


class CampaignInput(EntityInputBase):
    type: Literal["campaign"]
    metadata: CampaignMetadata = Field(default_factory=CampaignMetadata)


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


class DecisionInput(EntityInputBase):
    type: Literal["decision"]
    metadata: DecisionMetadata


class PainPointInput(EntityInputBase):
    type: Literal["pain_point"]
    metadata: PainPointMetadata = Field(default_factory=PainPointMetadata)


class PreferenceInput(EntityInputBase):
    type: Literal["preference"]
    metadata: PreferenceMetadata


EntityInput = Annotated[
    CampaignInput | MetricInput | DecisionInput | PainPointInput | PreferenceInput,
    Field(discriminator="type"),
]
entity_input_adapter: TypeAdapter[EntityInput] = TypeAdapter(EntityInput)

# --- what is stored ----------------------------------------------------------------------------


class BaseEntity(CamelModel):
    """The SPEC's BaseEntity, plus the aliases a name was seen under."""

    id: str
    user_id: str
    type: EntityType
    name: Name
    content: str = ""
    importance: Importance
    created_at: SafeCount
    updated_at: SafeCount
    session_id: str
    version: SafeCount = Field(ge=1)
    aliases: list[str] = Field(default_factory=list)
    #: The newest sources of this entity's facts (bounded), oldest first.
    provenance: list[Provenance] = Field(default_factory=list)
    #: Who wrote the current version: rules | workers-ai | openai | api.
    extractor: str | None = None


class CampaignEntity(BaseEntity):
    type: Literal["campaign"] = "campaign"
    metadata: CampaignMetadata = Field(default_factory=CampaignMetadata)


class MetricEntity(BaseEntity):
    type: Literal["metric"] = "metric"
    metadata: MetricMetadata


class DecisionEntity(BaseEntity):
    type: Literal["decision"] = "decision"
    metadata: DecisionMetadata


class PainPointEntity(BaseEntity):
    type: Literal["pain_point"] = "pain_point"
    metadata: PainPointMetadata = Field(default_factory=PainPointMetadata)


class PreferenceEntity(BaseEntity):
    type: Literal["preference"] = "preference"
    metadata: PreferenceMetadata


Entity = Annotated[
    CampaignEntity | MetricEntity | DecisionEntity | PainPointEntity | PreferenceEntity,
    Field(discriminator="type"),
]
entity_adapter: TypeAdapter[Entity] = TypeAdapter(Entity)

ENTITY_MODELS: dict[str, type[BaseEntity]] = {
    "campaign": CampaignEntity,
    "metric": MetricEntity,
    "decision": DecisionEntity,
    "pain_point": PainPointEntity,
    "preference": PreferenceEntity,
}


def parse_entity(data: Any) -> BaseEntity:
    """Validate a stored entity document (from KV) into its typed model."""
    return entity_adapter.validate_python(data)


# --- the index ---------------------------------------------------------------------------------


class RankEntry(CamelModel):
    """What ranking and selection read of an index entry (the SPEC's five fields, keywords,
    vector, links): a context request parses only these. At 10k entries parsing the index is
    a large part of its CPU; leaving out what only the writer needs parses it a third faster
    on CPython (50 against 73 ms), saves 5-10% of a parsed context in Pyodide and 13 MB of its
    wasm memory (docs/performance.md)."""

    model_config = ConfigDict(extra="ignore")  # the writer's fields, and a newer version's

    id: str
    type: EntityType
    name: str
    importance: float
    updated_at: SafeCount
    keywords: list[str] = Field(default_factory=list)
    #: How many leading keywords come from the name (weighted higher in ranking); None in
    #: entries written before the field existed (ranking then counts them).
    name_terms: int | None = None
    #: The entity's embedding as packed sign bits (embeddings/vectors.py); None: no vector.
    vec: str | None = None
    #: Ids of the campaigns this entity is about (a metric's `campaign`, a decision's
    #: `affectedEntities`, a pain point's `relatedCampaigns`, resolved by name and alias when
    #: written), so ranking brings a campaign's metrics and decisions without reading them.
    links: list[str] | None = None
    #: A decision's: ids of the pain points it was meant to fix (named in its
    #: `affectedEntities`), so a task about the pain point brings it along.
    addresses: list[str] | None = None
    #: The days the entity was said or measured on (its provenance, a metric's `observedOn`),
    #: newest first, a few, as one string ("2023-08-19 2023-08-02": one object to parse, and a
    #: day or a month is found in it by a substring test), so a task naming a day or month
    #: finds what was said then (domain/task_dates.py).
    days: str | None = None
    #: True for a resolved pain point (absent while open): always-injected means open.
    resolved: bool | None = None


class IndexEntry(RankEntry):
    """One line of `index:<userId>:entities`: what ranking reads, and what the writer needs
    besides (versions for the ledger, aliases and KPIs for resolving mentions, vector keys)."""

    version: SafeCount = 0
    #: The first few aliases, so extraction can resolve a mention without reading entities.
    aliases: list[str] = Field(default_factory=list)
    #: A hash of the entity's embedding text (index_entries.embedding_key), which `vec`, when
    #: set, was made from: a write that leaves the text as it was keeps the vector.
    vec_key: str | None = None
    #: Normalised campaign names the entity names that matched no stored campaign yet (at most
    #: a few); a campaign written later under one of them is linked then.
    pending_links: list[str] | None = None
    #: A metric's KPI in canonical form (`CPA`, `CPL`, ...: domain/vocab.py), so extraction
    #: resolves "cost per acquisition" and "CPA" of one campaign to one metric.
    kpi: str | None = None


class RankIndex(CamelModel):
    """The index as a context request reads it (`RankEntry` entries), never written back."""

    model_config = ConfigDict(extra="ignore")

    entries: list[RankEntry] = Field(default_factory=list)
    vector_model: str | None = None
    vector_center: list[float] | None = None


class EntityIndex(CamelModel):
    model_config = ConfigDict(extra="ignore")

    entries: list[IndexEntry] = Field(default_factory=list)
    #: The embedding model every `vec` in this index came from.
    vector_model: str | None = None
    #: The running mean of the vectors embedded so far, and how many it averages. Embedding
    #: models put every text in a narrow cone, so raw sign bits mostly encode that shared
    #: direction; signs of (vector - mean) encode what tells entities apart.
    vector_center: list[float] | None = None
    vector_count: SafeCount = 0
