"""Repairs a user can ask for (the cron does the same for recently written users)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from entity_memory.http.deps import StoreDep, UserId
from entity_memory.http.schemas import Reindexed

router = APIRouter(tags=["maintenance"])


@router.post("/v1/users/{user_id}/reindex", response_model=Reindexed)
async def reindex(user_id: UserId, store: StoreDep) -> dict[str, Any]:
    """Rebuild the user's index from the entity keys KV holds."""
    return await store.reindex(user_id)
