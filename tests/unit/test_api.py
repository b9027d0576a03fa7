"""The HTTP API on CPython (httpx's ASGI transport, in-memory KV); the same app the Worker runs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from entity_memory.domain.limits import MAX_BODY_BYTES
from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.settings import Settings
from entity_memory.storage.kv import InMemoryKV

from .conftest import T0, Clock

CAMPAIGN = {
    "type": "campaign",
    "name": "Campaign Alpha",
    "content": "Search campaign, switched to target CPA on Tuesday",
    "importance": 0.8,
    "metadata": {"strategy": "target CPA", "budget": 150, "status": "enabled"},
}
PREFERENCE = {
    "type": "preference",
    "name": "Numbers first",
    "content": "Lead with the numbers, then the story",
    "importance": 0.9,
    "metadata": {"category": "communication", "value": "numbers first"},
}


def make_client(memkv: InMemoryKV, clock: Clock, token: str | None = None) -> httpx.AsyncClient:
    settings = Settings(api_token=token)
    app = create_app(lambda env: Bindings(kv=memkv, settings=settings, clock=clock))
    # Starlette re-raises after sending its 500; the client should see only the response.
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://test")


@pytest.fixture
async def client(memkv: InMemoryKV, clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(memkv, clock) as c:
        yield c


def assert_error(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"} and body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


async def put(client: httpx.AsyncClient, user: str, *entities: dict, session: str = "s1"):
    return await client.put(
        f"/v1/users/{user}/entities", json={"session_id": session, "entities": list(entities)}
    )


async def test_healthz(client: httpx.AsyncClient) -> None:
    resp = await client.get("/healthz")
    assert resp.status_code == 200 and resp.json()["status"] == "ok"


async def test_upsert_get_list_delete_round_trip(
    client: httpx.AsyncClient, memkv: InMemoryKV
) -> None:
    resp = await put(client, "u1", CAMPAIGN, PREFERENCE)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert [r["key"] for r in body["results"]] == [
        "entity:u1:campaign:campaign-alpha",
        "entity:u1:preference:numbers-first",
    ]
    assert [(r["status"], r["version"]) for r in body["results"]] == [("created", 1)] * 2
    assert body["entities"][0]["userId"] == "u1" and body["entities"][0]["createdAt"] == T0
    assert resp.headers["x-kv-operations"] == "get=1,get_bulk=1,put=3"

    got = await client.get("/v1/users/u1/entities/campaign/campaign-alpha")
    assert got.status_code == 200
    assert got.json() == await memkv.get_json("entity:u1:campaign:campaign-alpha")

    listed = (await client.get("/v1/users/u1/entities", params={"type": "preference"})).json()
    assert listed["count"] == 1 and listed["entities"][0]["id"] == "numbers-first"

    again = await put(client, "u1", {**CAMPAIGN, "content": "Now on maximize conversions"})
    [result] = again.json()["results"]
    assert (result["status"], result["version"]) == ("updated", 2)
    assert result["changes"]["content"]["new"] == "Now on maximize conversions"

    deleted = await client.delete("/v1/users/u1/entities/campaign/campaign-alpha")
    assert deleted.status_code == 200
    assert await memkv.get_json("entity:u1:campaign:campaign-alpha") is None
    assert_error(
        await client.get("/v1/users/u1/entities/campaign/campaign-alpha"), 404, "not_found"
    )
    assert_error(
        await client.delete("/v1/users/u1/entities/campaign/campaign-alpha"), 404, "not_found"
    )


async def test_context_returns_block_entities_and_explain(client: httpx.AsyncClient) -> None:
    await put(client, "u1", CAMPAIGN, PREFERENCE)
    resp = await client.post(
        "/v1/users/u1/context", json={"task": "Review Campaign Alpha bids", "explain": True}
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    context = body["context"]
    assert context.startswith("<entity_memory>") and context.endswith("</entity_memory>")
    assert context.index("### User Preferences") < context.index("### Known Campaigns")
    assert "**Numbers first** (as of " in context and "Lead with the numbers" in context
    assert "**Campaign Alpha** (as of " in context
    assert [e["name"] for e in body["entities"]] == ["Campaign Alpha", "Numbers first"]
    assert [s["id"] for s in body["scores"]] == ["campaign-alpha", "numbers-first"]
    assert body["scores"][0]["relevance"] > body["scores"][1]["relevance"]
    plain = (await client.post("/v1/users/u1/context", json={"task": "x"})).json()
    assert "scores" not in plain


async def test_context_for_unknown_user_is_an_empty_block(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/users/nobody/context", json={"task": "anything"})
    assert resp.json() == {
        "context": "<entity_memory>\n</entity_memory>",
        "entities": [],
        "ranking": {"semantic": False, "lexicalReason": "off", "relevant": 0},
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/users/a:b/entities"),
        ("GET", "/v1/users/%3A/entities"),
        ("GET", "/v1/users/" + "x" * 129 + "/entities"),
        ("GET", "/v1/users/u1/entities/campaign/a:b"),
        ("DELETE", "/v1/users/u1/entities/campaign/..."),
        ("GET", "/v1/users/\u0430lice/entities"),
    ],
)
async def test_bad_path_ids_are_400_invalid_id(
    client: httpx.AsyncClient, method: str, path: str
) -> None:
    assert_error(await client.request(method, path), 400, "invalid_id")


async def test_unknown_type_is_400(client: httpx.AsyncClient) -> None:
    err = assert_error(await client.get("/v1/users/u1/entities/keyword/x"), 400, "invalid_type")
    assert "campaign" in err["details"]["allowed"]
    assert_error(await client.get("/v1/users/u1/entities?type=keyword"), 400, "invalid_type")


async def test_a_bad_item_rejects_the_whole_batch(
    client: httpx.AsyncClient, memkv: InMemoryKV
) -> None:
    await put(client, "u1", CAMPAIGN)
    before = dict(memkv._items)
    bad_type = {**PREFERENCE, "metadata": {"category": "mood", "value": "x"}}
    err = assert_error(
        await put(client, "u1", {**CAMPAIGN, "content": "x"}, bad_type), 422, "invalid_entity"
    )
    assert err["details"][0]["loc"][:2] == ["entities", 1]
    assert memkv._items == before
    err = assert_error(
        await put(client, "u1", PREFERENCE, {**CAMPAIGN, "id": "x:y"}), 400, "invalid_id"
    )
    assert err["details"]["index"] == 1
    err = assert_error(
        await put(client, "u1", PREFERENCE, {**CAMPAIGN, "name": "!!!"}), 400, "invalid_id"
    )
    assert err["details"]["index"] == 1  # a name with nothing to make an id of
    assert memkv._items == before
    assert_error(await put(client, "u1", {**CAMPAIGN, "importance": 1.5}), 422, "invalid_entity")
    assert_error(await put(client, "u1", {**CAMPAIGN, "surprise": 1}), 422, "invalid_entity")
    assert_error(await put(client, "u1", CAMPAIGN, session="bad session"), 400, "invalid_id")
    assert memkv._items == before


async def test_size_limits_are_413(client: httpx.AsyncClient, memkv: InMemoryKV) -> None:
    many = [{**CAMPAIGN, "name": f"Campaign {i}"} for i in range(101)]
    assert_error(await put(client, "u1", *many), 413, "too_large")
    huge = json.dumps({"session_id": "s", "entities": [], "pad": "x" * MAX_BODY_BYTES})
    resp = await client.put(
        "/v1/users/u1/entities", content=huge, headers={"content-type": "application/json"}
    )
    assert_error(resp, 413, "too_large")
    assert memkv._items == {}


async def test_malformed_json_and_missing_fields(client: httpx.AsyncClient) -> None:
    resp = await client.put(
        "/v1/users/u1/entities", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert_error(resp, 400, "invalid_json")
    # The same codes on a route whose body FastAPI parses (truncated JSON, invalid UTF-8).
    for bad in (b'{"task": "Review Alpha', b'{"task": "\xff\xfe"}'):
        resp = await client.post(
            "/v1/users/u1/context", content=bad, headers={"content-type": "application/json"}
        )
        assert_error(resp, 400, "invalid_json")
    missing = assert_error(
        await client.put("/v1/users/u1/entities", json={"entities": []}), 422, "missing_field"
    )
    assert missing["details"] == {"field": "session_id"} and "session_id" in missing["message"]
    no_task = assert_error(
        await client.post("/v1/users/u1/context", json={}), 422, "invalid_request"
    )
    # The message names what to fix, as on routes that parse their own body.
    assert "task" in no_task["message"]
    bad_limit = assert_error(
        await client.post("/v1/users/u1/context", json={"task": "x", "limit": 0}),
        422,
        "invalid_request",
    )
    assert "limit" in bad_limit["message"]


async def test_unknown_route_is_json_404(client: httpx.AsyncClient) -> None:
    error = assert_error(await client.get("/v1/user/u1/entities"), 404, "route_not_found")
    # What was asked, and where the routes are (a client can tell a typo from a missing entity).
    assert error["details"]["path"] == "/v1/user/u1/entities"
    assert error["details"]["method"] == "GET" and error["details"]["hint"]


async def test_a_route_called_with_another_method_says_which_it_takes(
    client: httpx.AsyncClient,
) -> None:
    refused = await client.delete("/v1/users/u1/context")
    error = assert_error(refused, 405, "method_not_allowed")
    assert error["details"]["allowed"] == ["POST"]
    assert refused.headers["allow"] == "POST"


async def test_internal_errors_hide_the_stack(
    memkv: InMemoryKV, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from entity_memory.storage.store import EntityStore

    async def broken(*args: Any) -> None:
        raise RuntimeError("validation secrets in a traceback")

    monkeypatch.setattr(EntityStore, "get", broken)
    async with make_client(memkv, clock) as c:
        resp = await c.get("/v1/users/u1/entities/campaign/broken")
    err = assert_error(resp, 500, "internal")
    assert "Traceback" not in resp.text and "secrets" not in err["message"]


async def test_a_corrupt_record_is_a_409_for_that_entity_only(
    memkv: InMemoryKV, clock: Clock
) -> None:
    await memkv.put("entity:u1:campaign:broken", json.dumps({"type": "campaign"}))
    async with make_client(memkv, clock) as c:
        resp = await c.get("/v1/users/u1/entities/campaign/broken")
    err = assert_error(resp, 409, "corrupt_record")
    assert "validat" not in err["message"] or "Traceback" not in resp.text


async def test_auth_when_token_is_set(memkv: InMemoryKV, clock: Clock) -> None:
    async with make_client(memkv, clock, token="s3cret-token") as c:
        assert (await c.get("/healthz")).status_code == 200
        resp = await c.get("/v1/users/u1/entities")
        assert_error(resp, 401, "unauthorized")
        assert resp.headers["www-authenticate"].startswith("Bearer")
        for header in ["Bearer wrong", "Basic s3cret-token", "Bearer", "s3cret-token"]:
            assert_error(
                await c.get("/v1/users/u1/entities", headers={"Authorization": header}),
                401,
                "unauthorized",
            )
        ok = await c.get("/v1/users/u1/entities", headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200


async def test_openapi_describes_every_route(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    paths = spec["paths"]
    assert set(paths) >= {
        "/healthz",
        "/v1/users/{user_id}/entities",
        "/v1/users/{user_id}/entities/{entity_type}/{entity_id}",
        "/v1/users/{user_id}/context",
    }
    assert "requestBody" in paths["/v1/users/{user_id}/entities"]["put"]
