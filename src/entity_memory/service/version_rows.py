"""What the ledger records of a batch upsert: a version per entity written, with how it
changed (created, updated, or contradicted: SPEC best practice 7), an observation row per
metric value the write added to a series, and the user's last write time.

The rules live here; the SQL (storage/ledger.py) takes plain values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from entity_memory.domain.kind import kind_of
from entity_memory.domain.merge import Change, MergeResult, same_value
from entity_memory.domain.task_dates import measured_ms
from entity_memory.storage.d1 import Statement
from entity_memory.storage.ledger import ChangeKind, Ledger

#: Fields whose change means the stored fact was contradicted, not merely refined (SPEC bp 7).
CONTRADICTION_FIELDS = frozenset(
    {
        "metadata.strategy",
        "metadata.budget",
        "metadata.status",
        "metadata.campaignId",
        "metadata.value",  # a KPI's value or a preference's value
        "metadata.resolved",
        "metadata.action",
    }
)


def change_kind(status: str, changes: dict[str, Change]) -> ChangeKind:
    if status == "created":
        return "created"
    if any(path in CONTRADICTION_FIELDS and _contradicts(c) for path, c in changes.items()):
        return "contradicted"
    return "updated"


def _contradicts(change: Change) -> bool:
    """A stated fact replaced by another; not a first statement, nor the same value written
    otherwise."""
    return change.old is not None and not same_value(change.old, change.new)


def _changes_json(changes: dict[str, Change]) -> str:
    return json.dumps({k: {"old": c.old, "new": c.new} for k, c in changes.items()})


def _observation_rows(ledger: Ledger, result: MergeResult) -> list[Statement]:
    """A row for each observation the write added to a metric's series, at the time its
    value was measured (trends order a series by it, so a value told late about an earlier
    day takes its place), even one older than the observations KV keeps. One that replaced
    an observation of the same session and day (a later chunk of the session) replaces its
    row, so the ledger says what KV says."""
    entity = result.entity
    if not kind_of(entity.type).keeps_series:
        return []
    meta = entity.metadata  # type: ignore[attr-defined]
    rows: list[Statement] = []
    for gone in result.observed.replaced:
        when = measured_ms(gone.get("observedOn"), gone["at"])
        rows.append(
            ledger.observation_removal_statement(
                entity.user_id, entity.id, gone.get("sessionId"), when
            )
        )
    for obs in result.observed.added:
        measured = measured_ms(obs.get("observedOn"), obs["at"])
        rows.append(
            ledger.observation_statement(
                entity.user_id,
                entity.id,
                meta.campaign,
                meta.kpi,
                obs["value"],
                meta.unit,
                measured,
                obs.get("sessionId"),
            )
        )
    return rows


def version_rows(
    ledger: Ledger,
    written: Iterable[MergeResult],
    now: int,
    entity_json: dict[tuple[str, str], str] | None = None,
) -> list[Statement]:
    """Rows for entities a batch wrote: a version each, an observation per new metric value.
    `entity_json` holds the JSON already made of entities (by type and id), so an entity
    written to KV is not serialised again for its version row."""
    statements: list[Statement] = []
    user_id = None
    made = entity_json or {}
    for result in written:
        entity, changes = result.entity, result.changes
        user_id = entity.user_id
        doc = made.get((entity.type, entity.id)) or json.dumps(entity.to_json_dict())
        kind = change_kind(result.status, changes)
        statements.append(ledger.version_statement(entity, kind, doc, _changes_json(changes), now))
        statements += _observation_rows(ledger, result)
    if user_id is not None:
        statements.append(ledger.activity_statement(user_id, now))
    return statements
