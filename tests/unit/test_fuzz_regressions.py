"""Regressions from fuzzing the API (bench/fuzz_api.py, hostile bodies, the property tests).

Each request here once answered (or still answers, where marked xfail) a 5xx or stored
something other than what was sent. The same requests answer 500 on the real local host.
Hostile input must always be a 4xx with a JSON error code, never a crash.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.storage.d1 import SQLiteD1
from entity_memory.storage.kv import InMemoryKV

from .conftest import REPO, Clock

JSON = {"content-type": "application/json"}


@pytest.fixture
async def client(memkv: InMemoryKV, clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    db = SQLiteD1(migrations=REPO / "migrations")
    app = create_app(lambda env: Bindings(kv=memkv, db=db, clock=clock))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


def error_code(resp: httpx.Response) -> str:
    body = resp.json()
    assert set(body) == {"error"}, resp.text
    return body["error"]["code"]


def metric_body(raw_value: str) -> str:
    """A batch whose metric value is written verbatim (JSON cannot say NaN; Python's parser
    accepts it, and 1e999 parses to infinity)."""
    return (
        '{"session_id": "s1", "entities": [{"type": "metric", "name": "Alpha CPA",'
        f' "metadata": {{"kpi": "CPA", "value": {raw_value}}}}}]}}'
    )


HOSTILE_IDS = [
    "a:b",
    "..",
    ".",
    "%3A",
    "a%3Ab",
    "x" * 129,
    "\uff41lpha",  # fullwidth a
    "\u0430lpha",  # Cyrillic a
    "a b",
    "a\\b",
    "entity:u2:campaign:x",
]


@pytest.mark.parametrize("bad", HOSTILE_IDS)
async def test_hostile_ids_are_a_4xx_on_every_route(client: httpx.AsyncClient, bad: str) -> None:
    requests = [
        ("GET", f"/v1/users/{bad}/entities", None),
        ("PUT", f"/v1/users/{bad}/entities", {"session_id": "s1", "entities": []}),
        ("PUT", "/v1/users/u1/entities", {"session_id": bad, "entities": []}),
        (
            "PUT",
            "/v1/users/u1/entities",
            {"session_id": "s1", "entities": [{"type": "campaign", "name": "A", "id": bad}]},
        ),
        ("GET", f"/v1/users/u1/entities/campaign/{bad}", None),
        ("DELETE", f"/v1/users/u1/entities/campaign/{bad}", None),
        ("GET", f"/v1/users/u1/entities/{bad}/x", None),
        ("POST", f"/v1/users/{bad}/context", {"task": "x"}),
        ("POST", f"/v1/users/u1/sessions/{bad}/extract", {"transcript": "user: hi"}),
        ("GET", f"/v1/users/u1/entities/campaign/{bad}/history", None),
        ("GET", f"/v1/users/{bad}/changes", None),
        ("GET", f"/v1/users/{bad}/trends", None),
        ("GET", f"/v1/users/{bad}/export", None),
        ("DELETE", f"/v1/users/{bad}", None),
        ("POST", f"/v1/users/{bad}/reindex", None),
    ]
    if bad in (".", ".."):
        # HTTP clients resolve dot segments before sending (RFC 3986), so these reach the
        # server only inside a body.
        requests = [r for r in requests if r[2] is not None and r[1] == "/v1/users/u1/entities"]
    for method, path, body in requests:
        resp = await client.request(method, path, json=body)
        assert 400 <= resp.status_code < 500, (method, path, resp.status_code, resp.text)
        assert error_code(resp)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"null",
        b"[]",
        b'"text"',
        b"{",
        b"\xff\xfe",
        b'{"session_id": "s1"}',
        b'{"session_id": "s1", "entities": {}}',
        b'{"session_id": "s1", "entities": [null]}',
        b'{"session_id": "s1", "entities": [{"type": "nope", "name": "A"}]}',
        b'{"session_id": 5, "entities": []}',
        b'{"session_id": "s1", "entities": [{"type": "campaign", "name": "A", "id": 7}]}',
        b'{"session_id": "s1", "entities": [], "extra": 1}',
        b'{"session_id": "s1", "entities": [{"type": "campaign", "name": "x\\ud800"}]}',
    ],
)
async def test_malformed_upsert_bodies_are_a_4xx(client: httpx.AsyncClient, body: bytes) -> None:
    resp = await client.put("/v1/users/u1/entities", content=body, headers=JSON)
    assert 400 <= resp.status_code < 500, resp.text
    assert error_code(resp)


async def test_nan_metric_value_is_rejected(client: httpx.AsyncClient, memkv: InMemoryKV) -> None:
    resp = await client.put("/v1/users/u1/entities", content=metric_body("NaN"), headers=JSON)
    # NaN is not JSON at all (Python's parser alone accepts it).
    assert resp.status_code == 400 and error_code(resp) == "invalid_json", resp.text
    assert await memkv.get_json("entity:u1:metric:alpha-cpa") is None


async def test_infinite_metric_value_is_rejected(
    client: httpx.AsyncClient, memkv: InMemoryKV
) -> None:
    resp = await client.put("/v1/users/u1/entities", content=metric_body("1e999"), headers=JSON)
    assert resp.status_code == 422 and error_code(resp) == "invalid_entity", resp.text
    assert await memkv.get_json("entity:u1:metric:alpha-cpa") is None


async def test_lone_surrogate_in_a_transcript_is_a_4xx(client: httpx.AsyncClient) -> None:
    resp = await client.post(
        "/v1/users/u1/sessions/s1/extract",
        content=b'{"transcript": "user: CPA \\ud800 is $40"}',
        headers=JSON,
    )
    assert resp.status_code == 422 and error_code(resp) == "invalid_request", resp.text


async def test_lone_surrogate_in_messages_is_a_4xx(client: httpx.AsyncClient) -> None:
    resp = await client.post(
        "/v1/users/u1/sessions/s1/extract",
        content=b'{"messages": [{"role": "user", "content": "CPA \\ud800 is $40"}]}',
        headers=JSON,
    )
    assert resp.status_code == 422, resp.text


async def test_long_emoji_name_fits_kv_metadata(
    client: httpx.AsyncClient, memkv: InMemoryKV
) -> None:
    name = "Campaign " + "\U0001f680" * 130
    resp = await client.put(
        "/v1/users/u1/entities",
        json={"session_id": "s1", "entities": [{"type": "campaign", "name": name}]},
    )
    assert resp.status_code == 200, resp.text
    key = resp.json()["results"][0]["key"]
    _, meta = await memkv.get_with_metadata(key)
    assert meta is not None and len(json.dumps(meta).encode()) <= 1024


async def test_changes_since_beyond_a_safe_integer_is_a_422(client: httpx.AsyncClient) -> None:
    for since in (2**53, 2**63, 10**30):
        resp = await client.get("/v1/users/u1/changes", params={"since": since})
        assert resp.status_code == 422 and error_code(resp) == "invalid_request", (since, resp.text)


async def test_changes_since_the_largest_safe_integer_is_fine(client: httpx.AsyncClient) -> None:
    resp = await client.get("/v1/users/u1/changes", params={"since": 2**53 - 1})
    assert resp.status_code == 200 and resp.json()["count"] == 0
