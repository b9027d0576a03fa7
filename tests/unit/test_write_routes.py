"""Which routes run in the user's writer: every route of the app, listed in one table.

A route writes iff it depends on `deps.writer` (and then it calls one typed operation of
`service.writes`); no path pattern decides it. A new route fails the first test until it is
classified here, and each writer route is sent once to check that it reaches the writer's
operation named here, and that the read routes never do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from entity_memory.http import deps
from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.storage.kv import CountingKV, InMemoryKV
from entity_memory.web import ASSETS

from .conftest import METRIC_TTL_MS, Clock
from .writer_twin import WriterTwin

CAMPAIGN = {"type": "campaign", "name": "Alpha", "content": "search", "importance": 0.5}
U = "/v1/users/{user_id}"

#: (method, path) -> the writer operation it calls, or None for a route that only reads.
ROUTES: dict[tuple[str, str], str | None] = {
    **{("GET", url): None for url in ASSETS},  # the inspector's page, modules, stylesheet
    ("GET", "/js/kinds.js"): None,  # the inspector's module of kinds, generated
    ("GET", "/healthz"): None,
    ("PUT", f"{U}/entities"): "upsert",
    ("GET", f"{U}/entities"): None,
    ("GET", f"{U}/entities/{{entity_type}}/{{entity_id}}"): None,
    ("DELETE", f"{U}/entities/{{entity_type}}/{{entity_id}}"): "delete_entity",
    ("POST", f"{U}/entities/{{entity_type}}/{{entity_id}}/merge"): "merge_entities",
    ("POST", f"{U}/context"): None,
    ("POST", f"{U}/sessions/{{session_id}}/extract"): "enqueue_extract",
    ("GET", f"{U}/jobs/{{job_id}}"): "job_status",
    ("GET", f"{U}/jobs"): "list_jobs",
    ("POST", f"{U}/reindex"): "reindex",
    ("POST", f"{U}/expired"): "drop_expired",
    ("DELETE", U): "forget",
    ("GET", f"{U}/entities/{{entity_type}}/{{entity_id}}/history"): None,
    ("GET", f"{U}/changes"): None,
    ("GET", f"{U}/trends"): None,
    ("GET", f"{U}/export"): None,
    ("GET", f"{U}/sessions"): None,
    ("GET", f"{U}/sessions/{{session_id}}"): None,
    ("GET", "/v1/admin/users"): None,
    ("POST", "/v1/admin/tokens"): None,
    ("GET", "/v1/admin/tokens"): None,
    ("DELETE", "/v1/admin/tokens/{token_id}"): None,
}

#: A request each writer route accepts (user "w"): (method, url, JSON body).
SAMPLES: dict[str, tuple[str, str, Any]] = {
    "upsert": ("PUT", "/v1/users/w/entities", {"session_id": "s1", "entities": [CAMPAIGN]}),
    "delete_entity": ("DELETE", "/v1/users/w/entities/campaign/alpha", None),
    "merge_entities": (
        "POST",
        "/v1/users/w/entities/campaign/alpha/merge",
        {"other": "beta", "version": 1, "other_version": 1},
    ),
    "enqueue_extract": (
        "POST",
        "/v1/users/w/sessions/s2/extract",
        {"messages": [{"role": "user", "content": "We run the Alpha campaign."}]},
    ),
    "list_jobs": ("GET", "/v1/users/w/jobs", None),
    "reindex": ("POST", "/v1/users/w/reindex", None),
    "drop_expired": (
        "POST",
        "/v1/users/w/expired",
        {"entities": [{"type": "campaign", "id": "alpha"}]},
    ),
    "forget": ("DELETE", "/v1/users/w", None),
}


def _depends_on_writer(dependant: Dependant) -> bool:
    return any(d.call is deps.writer or _depends_on_writer(d) for d in dependant.dependencies)


def _routes(routes: list[Any]) -> list[APIRoute]:
    """The app's API routes, through included routers (however FastAPI nests them)."""
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif hasattr(route, "original_router"):
            found += _routes(route.original_router.routes)
        elif hasattr(route, "routes"):
            found += _routes(route.routes)
    return found


def _app_routes() -> dict[tuple[str, str], bool]:
    app = create_app(lambda env: Bindings(kv=InMemoryKV()))
    # The list the app publishes; building it also includes the routers loaded on first use.
    published = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    found: dict[tuple[str, str], bool] = {}
    for route in _routes(app.routes):
        for method in route.methods - {"HEAD"}:
            found[(method, route.path)] = _depends_on_writer(route.dependant)
    assert published <= set(found)  # nothing hidden from the OpenAPI document
    return found


def test_every_route_is_classified_and_only_writer_routes_depend_on_the_writer() -> None:
    found = _app_routes()
    assert set(found) == set(ROUTES), "classify new routes in ROUTES"
    for key, writes in found.items():
        assert writes == (ROUTES[key] is not None), key


@pytest.fixture
async def setup(
    clock: Clock, db: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, WriterTwin, InMemoryKV]]:
    memkv = InMemoryKV(clock=clock)
    counted = CountingKV(memkv)
    base = Bindings(kv=counted, db=db, clock=clock)

    async def sleep(_: float) -> None:
        await asyncio.sleep(0)

    twin = WriterTwin(lambda env: base, clock, sleep)
    worker = Bindings(kv=counted, db=db, clock=clock, writers=twin.stub)
    app = create_app(lambda env: replace(worker))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c, twin, memkv


@pytest.mark.parametrize("operation", sorted(SAMPLES))
async def test_each_writer_route_reaches_its_operation_in_the_writer(
    setup: tuple[httpx.AsyncClient, WriterTwin, InMemoryKV], operation: str
) -> None:
    c, twin, _ = setup
    body = {"session_id": "s0", "entities": [CAMPAIGN, {**CAMPAIGN, "name": "Beta"}]}
    assert (await c.put("/v1/users/w/entities", json=body)).status_code == 200
    twin.calls.clear()
    method, url, payload = SAMPLES[operation]
    r = await c.request(method, url, json=payload)
    assert r.is_success, r.text
    # The route's own call comes first; a queued extraction then runs in the writer too.
    assert twin.calls[0] == ("w", operation)
    assert {user for user, _ in twin.calls} == {"w"}


async def test_read_routes_never_reach_the_writer(
    setup: tuple[httpx.AsyncClient, WriterTwin, InMemoryKV],
) -> None:
    c, twin, _ = setup
    body = {"session_id": "s0", "entities": [CAMPAIGN]}
    assert (await c.put("/v1/users/w/entities", json=body)).status_code == 200
    twin.calls.clear()
    for method, url, payload in [
        ("GET", "/v1/users/w/entities", None),
        ("GET", "/v1/users/w/entities/campaign/alpha", None),
        ("POST", "/v1/users/w/context", {"task": "Alpha"}),
        ("GET", "/v1/users/w/export", None),
        ("GET", "/v1/users/w/changes", None),
    ]:
        r = await c.request(method, url, json=payload)
        assert r.status_code == 200, (url, r.text)
    assert twin.calls == []


async def test_an_encoded_dot_dot_id_is_refused_and_never_redirects_to_the_user(
    setup: tuple[httpx.AsyncClient, WriterTwin, InMemoryKV],
) -> None:
    """`%252e%252e` decodes once to `%2e%2e`; nothing decodes it again into `..` (the
    object used to re-parse the URL and answer 307 to the user root, erasing it for a
    client that follows redirects)."""
    c, _, memkv = setup
    body = {"session_id": "s0", "entities": [CAMPAIGN]}
    assert (await c.put("/v1/users/redir/entities", json=body)).status_code == 200
    r = await c.delete("/v1/users/redir/entities/%252e%252e/%252e", follow_redirects=False)
    assert 400 <= r.status_code < 500, r.text
    assert "location" not in r.headers
    assert await memkv.get_json("entity:redir:campaign:alpha") is not None


async def test_an_unreachable_writer_answers_503_writer_unavailable(clock: Clock, db: Any) -> None:
    class Broken:
        async def serve(self, name: str, call_json: str) -> str:
            raise ConnectionError("Durable Object reset")

    worker = Bindings(kv=InMemoryKV(clock=clock), db=db, clock=clock, writers=lambda u: Broken())
    app = create_app(lambda env: replace(worker))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        body = {"session_id": "s0", "entities": [CAMPAIGN]}
        r = await c.put("/v1/users/w/entities", json=body)
    assert r.status_code == 503 and r.json()["error"]["code"] == "writer_unavailable"
    assert r.headers["retry-after"]


async def test_a_refusal_inside_the_writer_keeps_its_code(
    setup: tuple[httpx.AsyncClient, WriterTwin, InMemoryKV],
) -> None:
    c, _, _ = setup
    r = await c.post("/v1/users/w/sessions/s1/extract", json={"messages": [], "extractor": "rules"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "empty_conversation", r.text


async def test_repeated_expiry_reports_record_each_expiry_once(
    setup: tuple[httpx.AsyncClient, WriterTwin, InMemoryKV], clock: Clock, db: Any
) -> None:
    c, _, memkv = setup
    entities = [
        {"type": "metric", "name": f"M{i} CPA", "content": "cpa", "importance": 0.5,
         "metadata": {"kpi": "CPA", "value": i, "unit": "USD", "campaign": "Alpha"}}
        for i in range(10)
    ]  # fmt: skip
    assert await c.put("/v1/users/x/entities", json={"session_id": "s", "entities": entities})
    clock.advance(METRIC_TTL_MS + 1)  # the metrics' TTL has run out
    refs = {"entities": [{"type": "metric", "id": f"m{i}-cpa"} for i in range(10)]}
    dropped = [(await c.post("/v1/users/x/expired", json=refs)).json() for _ in range(5)]
    assert [d["dropped"] for d in dropped] == [10, 0, 0, 0, 0]
    rows = await db.all(
        "SELECT count(*) AS n FROM entity_versions WHERE user_id = ? AND change_kind = ?",
        ["x", "expired"],
    )
    assert rows[0]["n"] == 10
    assert json.loads(json.dumps(await memkv.get_json("index:x:entities")))["entries"] == []
