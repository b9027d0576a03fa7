"""Liveness: no auth, no storage."""

from __future__ import annotations

from fastapi import APIRouter

from entity_memory import __version__
from entity_memory.http.schemas import Health

router = APIRouter(tags=["meta"])


@router.get("/healthz", response_model=Health)
async def healthz() -> dict[str, str]:
    return {"status": "ok", "version": __version__}
