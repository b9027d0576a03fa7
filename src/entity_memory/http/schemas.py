"""Request and response models of the HTTP API: what /openapi.json publishes.

Responses are declared so that clients (and the Python client) can rely on their shape; the
routes still build plain dicts, which FastAPI validates against these models and serialises
with `exclude_unset`, so an optional key that a route leaves out stays out of the body.
Historical entity snapshots (ledger rows) are plain objects: they were written by older
versions and are reported as stored, not re-validated against today's schema.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from entity_memory.domain.kinds import (
    LinkedType,
    RegisteredEntity,
    RegisteredInput,
    RegisteredType,
)
from entity_memory.domain.limits import (
    DEFAULT_CONTEXT_LIMIT,
    DEFAULT_CONTEXT_TOKENS,
    MAX_BATCH,
    MAX_CONTEXT_LIMIT,
    MAX_CONTEXT_TOKENS,
    MAX_MESSAGES,
    MAX_TASK_CHARS,
    MAX_TOKEN_LABEL_CHARS,
)
from entity_memory.domain.models import IndexEntry
from entity_memory.embeddings.status import LexicalReason
from entity_memory.extraction.base import Message
from entity_memory.service.entity_merge import ExpectedVersion

# --- requests ----------------------------------------------------------------------------------


class StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UpsertBody(StrictBody):
    session_id: str = Field(description="the session these entities were learnt in")
    entities: list[RegisteredInput] = Field(max_length=MAX_BATCH)
    expected_versions: list[ExpectedVersion] | None = Field(
        default=None,
        max_length=MAX_BATCH,
        description="the version each entity had when it was read (0: must not exist);"
        " if one has changed since, 409 version_conflict and nothing is written",
    )


class MergeBody(StrictBody):
    other: str = Field(description="the id of the entity (of the same type) to merge in")
    version: int = Field(description="the kept entity's version when it was read")
    other_version: int = Field(description="the other entity's version when it was read")


class ExtractBody(StrictBody):
    messages: list[Message] | None = Field(
        default=None, description=f"at most {MAX_MESSAGES} (more is 413 too_large)"
    )
    transcript: str | None = Field(default=None, description="plain text, `user:` lines")
    extractor: str | None = Field(default=None, description="rules | workers-ai | openai")


class TokenBody(StrictBody):
    user_id: str = Field(description="the only user this token may access")
    label: str | None = Field(default=None, max_length=MAX_TOKEN_LABEL_CHARS)


class EntityRefBody(StrictBody):
    type: RegisteredType
    id: str


class ExpiredBody(StrictBody):
    entities: list[EntityRefBody] = Field(
        max_length=MAX_CONTEXT_LIMIT, description="entities a context request found expired"
    )


class ContextBody(StrictBody):
    task: str = Field(max_length=MAX_TASK_CHARS, description="what the new session is about")
    limit: int = Field(default=DEFAULT_CONTEXT_LIMIT, ge=1, le=MAX_CONTEXT_LIMIT)
    max_tokens: int = Field(default=DEFAULT_CONTEXT_TOKENS, ge=1, le=MAX_CONTEXT_TOKENS)
    explain: bool = False


# --- responses ---------------------------------------------------------------------------------


class Out(BaseModel):
    """A response body: camelCase on the wire; unknown keys are not invented by the schema."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Health(Out):
    status: Literal["ok"]
    version: str


class FieldChange(Out):
    old: Any = None
    new: Any = None


class UpsertItemResult(Out):
    key: str = Field(description="the KV key the entity lives under")
    id: str
    type: RegisteredType
    status: Literal["created", "updated", "unchanged"]
    version: int
    changes: dict[str, FieldChange] = Field(default_factory=dict)


class UpsertResponse(Out):
    entities: list[RegisteredEntity]
    results: list[UpsertItemResult]


class ListedEntity(IndexEntry):
    #: With `values=true`: the entity's value in a few words (domain/headline.py).
    value: str | None = None


class EntityList(Out):
    entities: list[ListedEntity]
    count: int


class EntityRef(Out):
    type: RegisteredType
    id: str


class Deleted(Out):
    deleted: EntityRef


class MergeResponse(Out):
    entity: RegisteredEntity
    merged: EntityRef
    #: The session id the kept entity's new version is recorded under.
    session_id: str
    #: The other's name and aliases left out (an entity holds at most 20 aliases).
    dropped_aliases: list[str]


class ScoreOut(Out):
    id: str
    type: RegisteredType
    name: str
    score: float
    relevance: float
    importance: float
    recency: float
    matched_terms: list[str]
    always_injected: bool
    lexical: float = Field(description="keyword relevance, 0..1")
    semantic: float | None = Field(description="embedding relevance, 0..1; null: no vector")
    linked_to: str | None = Field(
        default=None,
        description="the chosen campaign this entity came with, or for a decision the chosen "
        "pain point it addresses (its id)",
    )
    linked_type: LinkedType | None = Field(default=None, description="the type of `linkedTo`")


class Ranking(Out):
    semantic: bool = Field(description="whether embedding similarity took part in the ranking")
    lexical_reason: LexicalReason | None = Field(
        default=None,
        description="why ranking was keyword-only: off (no embedding model), other_model "
        "(the index's vectors are another model's; reindex), few_vectors, model_failed",
    )
    relevant: int | None = Field(
        default=None, description="how many entities reached the relevance floor for the task"
    )
    fallback: Literal["important_recent"] | None = Field(
        default=None,
        description="set when nothing stored is relevant to the task: the block then holds "
        "preferences, open pain points and the most important recent entities",
    )


class ContextResponse(Out):
    context: str = Field(description="the `<entity_memory>` block to put in the prompt")
    entities: list[RegisteredEntity] = Field(description="the entities in rank order")
    ranking: Ranking = Field(description="how the entities were ranked")
    scores: list[ScoreOut] | None = Field(default=None, description="with `explain: true`")


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int


class FieldDropOut(BaseModel):
    type: str
    name: str
    field: str = Field(description="`metadata.value`, `metadata.lastPerformance.ROAS`, `content`")
    value: float | str | None
    code: str = Field(description="number_not_in_conversation | value_tied_to_other_kpi | ...")
    reason: str


class ExtractResponse(Out):
    processed: bool = Field(description="false when this exact session was already processed")
    extractor: str | None
    entities: list[RegisteredEntity]
    results: list[UpsertItemResult]
    changes: list[UpsertItemResult] = Field(description="the results whose stored facts changed")
    rejected: list[dict[str, Any]] = Field(description="candidates validation refused, and why")
    dropped: list[FieldDropOut] = Field(
        default_factory=list,
        description="fields removed from stored candidates (a number the conversation does "
        "not state), and why",
    )
    degraded: bool
    pending: bool = Field(description="an LLM still owes part of the session (retried later)")
    reason: str | None = None
    counts: dict[str, int] | None = None
    degraded_reason: str | None = None
    usage: Usage | None = None


class CreatedToken(Out):
    token: str = Field(description="shown only in this response")
    token_id: str
    user_id: str
    label: str | None
    created_at: int


class TokenInfo(Out):
    token_id: str
    user_id: str
    label: str | None
    created_at: int
    revoked_at: int | None


class TokenList(Out):
    tokens: list[TokenInfo]


class Revoked(Out):
    revoked: str


class Version(Out):
    version: int
    change_kind: str
    changes: dict[str, Any]
    session_id: str | None
    recorded_at: int
    entity: dict[str, Any] | None = Field(
        default=None, description="the entity as this version left it (not in `changes`)"
    )


class History(Out):
    type: RegisteredType
    id: str
    versions: list[Version]


class EntityChanges(Out):
    type: RegisteredType
    id: str
    name: str | None
    status: str = Field(description="live | deleted | expired, after its last change here")
    current: dict[str, Any] | None = None
    changes: list[Version]


class Changes(Out):
    since: int
    entities: list[EntityChanges]
    count: int


class MetricTrend(Out):
    id: str
    kpi: str | None
    campaign: str | None
    unit: str | None
    first: float
    last: float
    min: float
    max: float
    observations: int
    first_at: int
    last_at: int
    direction: str | None
    trend: str | None
    #: which way is good for this KPI ("higher", "lower"), None when unknown: the inspector's
    #: sentence says this, not the direction the values moved.
    better: Literal["higher", "lower"] | None = None


class PainPointTrend(Out):
    id: str
    name: str
    first_seen: int
    last_seen: int
    frequency: int
    resolved: bool
    severity: str | None
    live: bool


class Trends(Out):
    metrics: list[MetricTrend]
    pain_points: list[PainPointTrend]


class MetricObservationRow(BaseModel):
    """A ledger row as stored (snake_case, as D1 returns it)."""

    metric_id: str
    campaign: str | None
    kpi: str | None
    value: float
    unit: str | None
    observed_at: int
    session_id: str | None


class VersionOf(Version):
    type: RegisteredType
    id: str


class Export(Out):
    user_id: str
    exported_at: int
    entities: list[RegisteredEntity]
    history: list[VersionOf]
    metric_observations: list[MetricObservationRow]


class Forgotten(Out):
    complete: bool = Field(description="false: keys remain; repeat the call")
    kv_keys_deleted: int
    ledger_rows_deleted: dict[str, int] | None = None
    tokens_deleted: int | None = None
    writer_rows_deleted: int | None = Field(
        default=None, description="rows of the user's writer's own copy (Durable Object storage)"
    )


class ExpiredDropped(Out):
    dropped: int = Field(description="index entries removed (missing in KV, TTL run out)")


class Reindexed(Out):
    entries: int
    restored: int
    dropped: int
    refreshed: int
    embedded: int = Field(default=0, description="entries given a vector (backfill)")


class SessionInfo(Out):
    session_id: str
    processed_at: int
    counts: dict[str, int]


class SessionList(Out):
    sessions: list[SessionInfo]
    count: int


class SessionRejection(Out):
    extractor: str
    entity_type: str | None = None
    name: str | None = None
    code: str | None = Field(default=None, description="a stable reason code, when there is one")
    reason: str
    item: Any = Field(default=None, description="the candidate as the extractor gave it")
    recorded_at: int


class SessionWrite(Out):
    type: RegisteredType
    id: str
    name: str
    version: int
    change_kind: str
    changes: dict[str, Any]
    recorded_at: int


class SessionDetail(Out):
    session_id: str
    processed_at: int | None
    counts: dict[str, int]
    extracted: list[SessionWrite] = Field(description="the versions this session wrote")
    rejected: list[SessionRejection] = Field(description="candidates refused, and why")


class UserInfo(Out):
    user_id: str
    last_write_at: int


class UserList(Out):
    users: list[UserInfo]
    count: int
    next_before: int | None = Field(
        default=None, description="pass as `before` for the next page; absent on the last"
    )
