"""Entities by key: batch upsert, list, get, delete."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Request

from entity_memory.domain.headline import headline
from entity_memory.domain.keys import InvalidId, entity_key, slug_for, validate_id, validate_type
from entity_memory.domain.kinds import MetricMetadata, RegisteredEntity
from entity_memory.domain.limits import MAX_BATCH
from entity_memory.domain.models import EntityInputBase
from entity_memory.domain.task_dates import after_today, iso_day
from entity_memory.http.body import openapi_body, parse, read_json
from entity_memory.http.deps import (
    BindingsDep,
    EntityRefDep,
    StoreDep,
    UserId,
    WriterDep,
    pinned_now,
)
from entity_memory.http.errors import ApiError
from entity_memory.http.schemas import (
    Deleted,
    EntityList,
    MergeBody,
    MergeResponse,
    UpsertBody,
    UpsertResponse,
)
from entity_memory.service import writes
from entity_memory.service.entity_merge import ExpectedVersion
from entity_memory.service.writes import DeleteCall, MergeCall, UpsertCall

router = APIRouter(prefix="/v1/users/{user_id}/entities", tags=["entities"])


#: What a batch must name, and what to say when it does not.
_REQUIRED = {
    "session_id": "session_id is required: the id of the conversation these entities come from",
    "entities": "entities is required: a list of at most 100 entities",
}


def _check_batch(raw: Any) -> None:
    """Errors the schema would report less usefully: a missing field is 422 `missing_field`
    naming it, an oversized batch is 413, and a bad entity id is 400 `invalid_id` with its
    position, as on every other route."""
    if isinstance(raw, dict):
        for name, message in _REQUIRED.items():
            if raw.get(name) is None:
                hint = " (sent as sessionId)" if name == "session_id" and "sessionId" in raw else ""
                raise ApiError(422, "missing_field", message + hint, {"field": name})
    if not (isinstance(raw, dict) and isinstance(raw.get("entities"), list)):
        return
    if len(raw["entities"]) > MAX_BATCH:
        raise ApiError(413, "too_large", f"at most {MAX_BATCH} entities per batch")
    for i, item in enumerate(raw["entities"]):
        if not isinstance(item, dict):
            continue
        try:
            if item.get("id") is not None:
                validate_id(item["id"], "entity")
            elif isinstance(item.get("name"), str) and item["name"].strip():
                slug_for(item["name"])  # a name with nothing to make an id of ("!!!")
        except InvalidId as exc:
            details = {"kind": "entity", "index": i}
            raise ApiError(400, "invalid_id", f"entities[{i}]: {exc}", details) from exc


def _check_measured_days(entities: Sequence[EntityInputBase], now: int) -> None:
    """A metric value measured after today is a slip: it would stay the latest measured
    against every real value after it. 422, nothing written."""
    for i, item in enumerate(entities):
        meta = getattr(item, "metadata", None)
        if not isinstance(meta, MetricMetadata):
            continue
        for day in (meta.observed_on, *(h.observed_on for h in meta.history)):
            if day and after_today(day, now):
                message = f"entities[{i}]: observedOn {day} is after today ({iso_day(now)})"
                raise ApiError(422, "invalid_entity", message, {"index": i, "field": "observedOn"})


@router.put(
    "",
    response_model=UpsertResponse,
    response_model_exclude_unset=True,
    openapi_extra=openapi_body(UpsertBody),
)
async def upsert_entities(
    user_id: UserId, request: Request, writer: WriterDep, b: BindingsDep
) -> dict[str, Any]:
    """Upsert a batch (at most 100) of entities; a bad item rejects the whole batch. With
    `expected_versions`, a batch whose entities changed since they were read is refused
    (409 `version_conflict`), nothing written."""
    raw = await read_json(request)
    _check_batch(raw)
    body = parse(UpsertBody, raw, "invalid_entity", "entities do not validate")
    validate_id(body.session_id, "session")
    _check_measured_days(body.entities, pinned_now(request, b) or b.clock())
    call = UpsertCall(user_id=user_id, session_id=body.session_id, entities=body.entities)
    if body.expected_versions:
        call = call.model_copy(update={"expected_versions": body.expected_versions})
    return (await writer.run(writes.upsert, call)).model_dump()


@router.get("", response_model=EntityList, response_model_exclude_unset=True)
async def list_entities(
    user_id: UserId, store: StoreDep, type: str | None = None, values: bool = False
) -> dict[str, Any]:
    """Index entries of the user's entities, newest first (one KV read); `values=true` adds
    each one's `value` in a few words (one bulk read of the entities per 100)."""
    if type is not None:
        validate_type(type)
    entries = await store.list(user_id, type)
    rows = [e.to_json_dict() for e in entries]
    if values:
        keys = [entity_key(user_id, e.type, e.id) for e in entries]
        found = await store.get_many(keys)
        for row, key in zip(rows, keys, strict=True):
            entity = found.get(key)
            row["value"] = headline(entity) if entity is not None else None
    return {"entities": rows, "count": len(rows)}


@router.get(
    "/{entity_type}/{entity_id}", response_model=RegisteredEntity, response_model_exclude_unset=True
)
async def get_entity(user_id: UserId, ref: EntityRefDep, store: StoreDep) -> dict[str, Any]:
    entity = await store.get(user_id, *ref)
    if entity is None:
        raise ApiError(404, "not_found", f"no {ref[0]} {ref[1]!r}")
    return entity.to_json_dict()


@router.delete("/{entity_type}/{entity_id}", response_model=Deleted)
async def delete_entity(user_id: UserId, ref: EntityRefDep, writer: WriterDep) -> dict[str, Any]:
    call = DeleteCall(user_id=user_id, entity_type=ref[0], entity_id=ref[1])
    if not (await writer.run(writes.delete_entity, call)).deleted:
        raise ApiError(404, "not_found", f"no {ref[0]} {ref[1]!r}")
    return {"deleted": {"type": ref[0], "id": ref[1]}}


@router.post(
    "/{entity_type}/{entity_id}/merge",
    response_model=MergeResponse,
    openapi_extra=openapi_body(MergeBody),
)
async def merge_entities(
    user_id: UserId, ref: EntityRefDep, request: Request, writer: WriterDep
) -> dict[str, Any]:
    """Merge another entity of the same type into this one, in one write of the user's
    writer: its name and aliases become aliases here, its facts fill what this one lacks, it
    is deleted (its history stays in the ledger). Both versions must be those read (else 409
    `version_conflict`, nothing written)."""
    body = parse(MergeBody, await read_json(request), "invalid_request", "merge does not validate")
    validate_id(body.other, "entity")
    keep = ExpectedVersion(type=ref[0], id=ref[1], version=body.version)
    other = ExpectedVersion(type=ref[0], id=body.other, version=body.other_version)
    call = MergeCall(user_id=user_id, entity_type=ref[0], keep=keep, other=other)
    return (await writer.run(writes.merge_entities, call)).model_dump(by_alias=True)
