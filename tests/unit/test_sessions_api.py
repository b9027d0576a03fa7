"""GET /v1/users/{u}/sessions[/{s}] (what a session wrote and what it refused, and why) and
GET /v1/admin/users (who has memory): each with its status and error code."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.kv import InMemoryKV

from .conftest import Clock
from .test_api import assert_error

ADMIN = "admin-secret"


@pytest.fixture
async def client(
    memkv: InMemoryKV, clock: Clock, db: CountingD1
) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(api_token=ADMIN)
    app = create_app(
        lambda env: Bindings(
            kv=memkv, db=db, settings=settings, clock=clock, vars={"EXTRACTOR": "rules"}
        )
    )
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    headers = {"Authorization": f"Bearer {ADMIN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
        yield c


async def _put(client: httpx.AsyncClient, user: str, session: str, name: str) -> None:
    body = {"session_id": session, "entities": [{"type": "campaign", "name": name}]}
    r = await client.put(f"/v1/users/{user}/entities", json=body)
    assert r.status_code == 200, r.text


async def test_a_session_shows_what_it_wrote(client: httpx.AsyncClient, clock: Clock) -> None:
    await _put(client, "ann", "s-one", "Campaign Alpha")
    r = await client.get("/v1/users/ann/sessions/s-one")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["sessionId"] == "s-one"
    assert [(w["type"], w["name"], w["changeKind"]) for w in body["extracted"]] == [
        ("campaign", "Campaign Alpha", "created")
    ]
    assert body["rejected"] == []


async def test_an_extracted_session_is_listed_with_its_rejections(
    client: httpx.AsyncClient,
) -> None:
    messages = [
        {"role": "user", "content": "Campaign Alpha runs on target CPA with a $60 daily budget."}
    ]
    r = await client.post("/v1/users/ann/sessions/s-x/extract", json={"messages": messages})
    assert r.status_code == 200, r.text
    listed = await client.get("/v1/users/ann/sessions")
    assert listed.status_code == 200
    assert [s["sessionId"] for s in listed.json()["sessions"]] == ["s-x"]
    detail = (await client.get("/v1/users/ann/sessions/s-x")).json()
    assert detail["counts"]["messages"] == 1
    assert len(detail["rejected"]) == detail["counts"]["rejected"]


async def test_an_unknown_session_is_404_not_found(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/v1/users/ann/sessions/nope"), 404, "not_found")


async def test_a_bad_session_id_is_400_invalid_id(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/v1/users/ann/sessions/a%20b"), 400, "invalid_id")


async def test_the_admin_lists_users_newest_first_in_pages(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    for user in ("ann", "bob", "cat"):
        await _put(client, user, "s1", "Campaign Alpha")
        clock.advance(1000)
    r = await client.get("/v1/admin/users", params={"limit": 2})
    assert r.status_code == 200, r.text
    first = r.json()
    assert [u["userId"] for u in first["users"]] == ["cat", "bob"]
    rest = (await client.get("/v1/admin/users", params={"before": first["nextBefore"]})).json()
    assert [u["userId"] for u in rest["users"]] == ["ann"] and "nextBefore" not in rest


async def test_a_user_token_may_not_list_users(client: httpx.AsyncClient) -> None:
    minted = await client.post("/v1/admin/tokens", json={"user_id": "ann"})
    assert minted.status_code == 201, minted.text
    user = {"Authorization": f"Bearer {minted.json()['token']}"}
    refused = await client.get("/v1/admin/users", headers=user)
    assert_error(refused, 403, "forbidden")
    # It says the route is an admin one, not that the token belongs to someone else.
    message = refused.json()["error"]["message"]
    assert "admin" in message and "another user" not in message


async def test_forgetting_a_user_erases_its_rejections(client: httpx.AsyncClient) -> None:
    await _put(client, "ann", "s1", "Campaign Alpha")
    gone = (await client.delete("/v1/users/ann")).json()
    assert "session_rejections" in gone["ledgerRowsDeleted"]
    assert (await client.get("/v1/admin/users")).json()["users"] == []


async def test_the_list_gives_each_entitys_value_on_request(client: httpx.AsyncClient) -> None:
    body = {
        "session_id": "s1",
        "entities": [
            {
                "type": "metric",
                "name": "Alpha CPA",
                "metadata": {"kpi": "CPA", "value": 41.5, "unit": "USD", "target": 40},
            },
            {
                "type": "campaign",
                "name": "Alpha",
                "metadata": {"status": "enabled", "budget": 60},
            },
        ],
    }
    assert (await client.put("/v1/users/ann/entities", json=body)).status_code == 200
    plain = (await client.get("/v1/users/ann/entities")).json()["entities"]
    assert all("value" not in e for e in plain)
    listed = (await client.get("/v1/users/ann/entities", params={"values": "true"})).json()
    values = {e["name"]: e["value"] for e in listed["entities"]}
    assert values == {"Alpha CPA": "$41.50 (target $40)", "Alpha": "enabled · budget 60"}
