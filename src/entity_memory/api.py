"""HTTP API (placeholder until the store lands)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from .config import Bindings


def create_app(bind: Callable[[Any], Bindings]) -> FastAPI:
    app = FastAPI(title="entity-memory")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
