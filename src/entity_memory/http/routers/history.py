"""The user's history in D1: versions, changes, trends, export, and erasure."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from entity_memory.domain.kinds import PAIN_POINT
from entity_memory.domain.limits import (
    DEFAULT_CHANGES_LIMIT,
    DEFAULT_HISTORY_LIMIT,
    MAX_CHANGES_LIMIT,
    MAX_HISTORY_LIMIT,
)
from entity_memory.domain.safe_json import MAX_SAFE_INTEGER
from entity_memory.domain.trends import metric_trends, pain_point_trends
from entity_memory.http.deps import EntityRefDep, LedgerDep, StoreDep, UserId, WriterDep
from entity_memory.http.errors import ApiError
from entity_memory.http.schemas import Changes, Export, Forgotten, History, Trends
from entity_memory.service import writes
from entity_memory.service.writes import ForgetCall

router = APIRouter(prefix="/v1/users/{user_id}", tags=["ledger"])


@router.get("/entities/{entity_type}/{entity_id}/history", response_model=History)
async def history(
    user_id: UserId,
    ref: EntityRefDep,
    ledger: LedgerDep,
    limit: Annotated[int, Query(ge=1, le=MAX_HISTORY_LIMIT)] = DEFAULT_HISTORY_LIMIT,
) -> dict[str, Any]:
    """Every recorded version of one entity, newest first, with the fields that changed."""
    versions = await ledger.history(user_id, *ref, limit)
    if not versions:
        raise ApiError(404, "not_found", f"no history for {ref[0]} {ref[1]!r}")
    return {"type": ref[0], "id": ref[1], "versions": versions}


@router.get("/changes", response_model=Changes, response_model_exclude_unset=True)
async def changes(
    user_id: UserId,
    ledger: LedgerDep,
    since: Annotated[
        int, Query(ge=0, lt=MAX_SAFE_INTEGER, description="epoch ms; changes after this")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_CHANGES_LIMIT)] = DEFAULT_CHANGES_LIMIT,
) -> dict[str, Any]:
    """What changed since a time (e.g. the last session), grouped by entity."""
    grouped = await ledger.changes_since(user_id, since, limit)
    return {"since": since, "entities": grouped, "count": len(grouped)}


@router.get("/trends", response_model=Trends)
async def trends(user_id: UserId, ledger: LedgerDep) -> dict[str, Any]:
    """Per metric: first/last/min/max and whether it improves; per pain point: recurrence."""
    return {
        "metrics": metric_trends(await ledger.metric_observations(user_id)),
        "painPoints": pain_point_trends(await ledger.versions_of_type(user_id, PAIN_POINT.type)),
    }


@router.get("/export", response_model=Export)
async def export(user_id: UserId, ledger: LedgerDep, store: StoreDep) -> dict[str, Any]:
    """All live entities and their full history, as one document (data portability)."""
    entities = await store.live_entities(user_id)
    return {
        "userId": user_id,
        "exportedAt": store.clock(),
        "entities": [e.to_json_dict() for e in entities],
        "history": await ledger.all_versions(user_id),
        "metricObservations": await ledger.metric_observations(user_id),
    }


@router.delete("", response_model=Forgotten, response_model_exclude_unset=True)
async def forget_user(user_id: UserId, ledger: LedgerDep, writer: WriterDep) -> dict[str, Any]:
    """Erase everything of the user in KV and D1, API tokens included (last, so a user's
    own token can repeat the call), and the copy in the user's writer. Runs inside the
    writer, so no write can race it. Repeat while `complete` is false."""
    done = await writer.run(writes.forget, ForgetCall(user_id=user_id))
    return done.model_dump(by_alias=True, exclude_none=True)
