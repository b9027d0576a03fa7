"""Repairs a user can ask for (the cron does the same for recently written users)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from entity_memory.http.deps import UserId, WriterDep
from entity_memory.http.schemas import ExpiredBody, ExpiredDropped, Reindexed
from entity_memory.service import writes
from entity_memory.service.writes import EntityRefModel, ExpiredCall, ReindexCall

router = APIRouter(tags=["maintenance"])


@router.post("/v1/users/{user_id}/reindex", response_model=Reindexed)
async def reindex(user_id: UserId, writer: WriterDep) -> dict[str, Any]:
    """Rebuild the user's index from the entity keys KV holds (in the user's writer)."""
    return (await writer.run(writes.reindex, ReindexCall(user_id=user_id))).model_dump()


@router.post("/v1/users/{user_id}/expired", response_model=ExpiredDropped)
async def drop_expired(user_id: UserId, body: ExpiredBody, writer: WriterDep) -> dict[str, Any]:
    """Forget index entries whose entities expired, in the user's writer (which owns the
    index); each entity is checked again there, and each expiry recorded once."""
    refs = [EntityRefModel(type=e.type, id=e.id) for e in body.entities]
    return (
        await writer.run(writes.drop_expired, ExpiredCall(user_id=user_id, entities=refs))
    ).model_dump()
