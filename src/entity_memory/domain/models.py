"""Pydantic schemas every entity shares: as stored, as clients send it, and the index.

Each kind's own metadata, input and entity models live with its kind (domain/kinds/).

Stored JSON uses the SPEC's camelCase names (`userId`, `createdAt`, ...) and epoch
milliseconds. Inputs are strict (`extra="forbid"`): a misspelt field is an error the caller
sees, not data silently dropped. Server-owned fields (`userId`, `version`, timestamps) are
never taken from input.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)
from pydantic.alias_generators import to_camel

from entity_memory.domain.keys import validate_id
from entity_memory.domain.kind import is_kind, kind_of
from entity_memory.domain.safe_json import MAX_SAFE_INTEGER
from entity_memory.domain.task_dates import MAX_EPOCH_MS, MIN_EPOCH_MS

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


IsoDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD")]


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


# --- what is stored ----------------------------------------------------------------------------


class BaseEntity(CamelModel):
    """The SPEC's BaseEntity, plus the aliases a name was seen under."""

    id: str
    user_id: str
    #: The kind's name; each kind's entity model narrows it to its own (domain/kinds/).
    type: str
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


def parse_entity(data: Any) -> BaseEntity:
    """Validate a stored entity document (from KV) into its kind's typed model; a document of
    no known kind fails as the kinds' union does (a ValidationError naming the type)."""
    entity_type = data.get("type") if isinstance(data, dict) else None
    if is_kind(entity_type):
        return kind_of(entity_type).entity_model.model_validate(data)
    from entity_memory.domain.kinds import entity_adapter  # the union says what is wrong

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
    #: Written by the writer from a validated entity, so read as is (a newer version's kind
    #: is ranked, not refused).
    type: str
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
    #: What a metric's cost is per, where it says (`booking` for a cost per booking:
    #: domain/kpi.py `counted_thing`): two CPAs that count different things stay apart.
    counts: str | None = Field(default=None, exclude_if=lambda v: v is None)


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
