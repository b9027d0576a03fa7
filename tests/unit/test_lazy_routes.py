"""Routers a typical request does not use are included on first use, and then serve it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.routing import Route

from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.kv import InMemoryKV

CHANGES = "/v1/users/{user_id}/changes"


def _paths(routes: list[Any]) -> set[str]:
    """Every route's path, through included routers (however FastAPI nests them)."""
    found: set[str] = set()
    for route in routes:
        if isinstance(route, Route):
            found.add(route.path)
        nested = getattr(route, "original_router", route)
        found |= _paths(getattr(nested, "routes", []))
    return found


@pytest.fixture
def app(db: CountingD1) -> FastAPI:
    return create_app(lambda _env: Bindings(kv=InMemoryKV(), db=db))


async def _get(app: FastAPI, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.get(path)


async def test_a_request_served_by_the_loaded_routes_loads_nothing(app: FastAPI) -> None:
    assert (await _get(app, "/healthz")).status_code == 200
    assert CHANGES not in _paths(app.routes)


async def test_the_first_request_for_a_lazy_route_is_served_by_it(app: FastAPI) -> None:
    assert CHANGES not in _paths(app.routes)
    answer = await _get(app, "/v1/users/u1/changes")
    assert answer.status_code == 200, answer.text
    assert CHANGES in _paths(app.routes)


async def test_an_unknown_path_is_still_a_404_once_everything_is_loaded(app: FastAPI) -> None:
    answer = await _get(app, "/v1/nowhere")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "route_not_found"
    assert CHANGES in _paths(app.routes)


def test_the_openapi_document_lists_the_routes_not_yet_loaded(app: FastAPI) -> None:
    assert CHANGES in app.openapi()["paths"]
