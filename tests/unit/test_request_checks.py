"""Requests refused on their shape with a clear code: a bad Host, an id hiding a slash, a batch
without its session, a preference category that does not exist."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from entity_memory.domain.vocab import (
    PREFERENCE_CATEGORIES,
    PREFERENCE_CATEGORY_SYNONYMS,
    preference_category,
)
from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.kv import InMemoryKV

from .conftest import Clock

ADMIN = "admin-secret-token"
BEARER = {"Authorization": f"Bearer {ADMIN}"}
CAMPAIGN = {"type": "campaign", "name": "Campaign Alpha"}

#: One request of each kind: public pages, reads, writes, admin.
ROUTES: list[tuple[str, str, dict | None]] = [
    ("GET", "/healthz", None),
    ("GET", "/", None),
    ("GET", "/v1/users/u/entities", None),
    ("PUT", "/v1/users/u/entities", {"session_id": "s1", "entities": [CAMPAIGN]}),
    ("POST", "/v1/users/u/context", {"task": "alpha"}),
    ("POST", "/v1/users/u/sessions/s2/extract", {"transcript": "user: pause Campaign Alpha"}),
    ("POST", "/v1/users/u/reindex", None),
    ("POST", "/v1/users/u/expired", None),
    ("DELETE", "/v1/users/u/entities/campaign/campaign-alpha", None),
    ("DELETE", "/v1/users/u", None),
    ("GET", "/v1/admin/tokens", None),
]
BAD_HOSTS = ["a b", "evil.example/x", "user@evil.example", "x?y", "x#y", "exa%41", "", "a:b:c"]


@pytest.fixture
async def api(memkv: InMemoryKV, db: CountingD1, clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    bindings = Bindings(
        kv=memkv,
        db=db,
        clock=clock,
        settings=Settings(api_token=ADMIN),
        vars={"EXTRACTOR": "rules"},
    )
    transport = httpx.ASGITransport(
        app=create_app(lambda env: bindings), raise_app_exceptions=False
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        yield client


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
async def test_a_bad_host_header_is_400_on_every_route(
    api: httpx.AsyncClient, method: str, path: str, body: dict | None
) -> None:
    for host in BAD_HOSTS:
        headers = {**BEARER, "Host": host}
        r = await api.request(method, path, json=body, headers=headers)
        assert r.status_code == 400, (host, r.text)
        assert r.json()["error"]["code"] == "invalid_host" and "retry-after" not in r.headers
    assert (await api.get("/v1/users/u/entities", headers=BEARER)).json()["count"] == 0


@pytest.mark.parametrize("host", ["localhost", "localhost:8787", "127.0.0.1:80", "[::1]:8787"])
async def test_usual_host_headers_pass(api: httpx.AsyncClient, host: str) -> None:
    r = await api.get("/v1/users/u/entities", headers={**BEARER, "Host": host})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/v1/users/a%2Fb/entities", "user"),
        ("/v1/users/a%2fb", "user"),
        ("/v1/users/u/entities/campaign/a%2Fb", "entity"),
        ("/v1/users/u/entities/campaign/a%2Fb/history", "entity"),
    ],
)
async def test_an_id_with_an_encoded_slash_is_an_id_error(
    api: httpx.AsyncClient, path: str, kind: str
) -> None:
    for method in ("GET", "DELETE"):
        r = await api.request(method, path, headers=BEARER)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "invalid_id"
        assert r.json()["error"]["details"]["kind"] == kind


async def test_an_encoded_slash_in_a_session_id_is_an_id_error(api: httpx.AsyncClient) -> None:
    r = await api.post(
        "/v1/users/u/sessions/s%2F1/extract", json={"transcript": "user: hi"}, headers=BEARER
    )
    assert r.status_code == 400 and r.json()["error"]["details"]["kind"] == "session"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"entities": [CAMPAIGN]}, "session_id"),
        ({"session_id": None, "entities": [CAMPAIGN]}, "session_id"),
        ({"sessionId": "s1", "entities": [CAMPAIGN]}, "session_id"),
        ({"session_id": "s1"}, "entities"),
    ],
)
async def test_a_batch_missing_a_field_names_it(
    api: httpx.AsyncClient, body: dict, field: str
) -> None:
    r = await api.put("/v1/users/u/entities", json=body, headers=BEARER)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "missing_field" and error["details"] == {"field": field}
    assert field in error["message"]
    assert (await api.get("/v1/users/u/entities", headers=BEARER)).json()["count"] == 0


def preference(category: str) -> dict:
    return {
        "type": "preference",
        "name": f"Prefers {category}",
        "metadata": {"category": category, "value": "conservative"},
    }


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("bidding", "risk"),
        ("Risk Tolerance", "risk"),
        ("risk-appetite", "risk"),
        ("RISK", "risk"),
        ("reports", "reporting"),
        ("analytics", "analysis"),
    ],
)
async def test_a_category_synonym_is_stored_as_its_category(
    api: httpx.AsyncClient, sent: str, stored: str
) -> None:
    body = {"session_id": "s1", "entities": [preference(sent)]}
    r = await api.put("/v1/users/u/entities", json=body, headers=BEARER)
    assert r.status_code == 200, r.text
    assert r.json()["entities"][0]["metadata"]["category"] == stored


@pytest.mark.parametrize("sent", ["weather", "budget", "", "risky bidding please"])
async def test_an_unknown_category_is_a_422_listing_the_categories(
    api: httpx.AsyncClient, sent: str
) -> None:
    body = {"session_id": "s1", "entities": [preference(sent)]}
    r = await api.put("/v1/users/u/entities", json=body, headers=BEARER)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_entity"
    for category in PREFERENCE_CATEGORIES:
        assert category in error["message"] and category in error["details"][0]["msg"]
    assert error["details"][0]["loc"][-1] == "category"


def test_every_synonym_names_a_category() -> None:
    assert set(PREFERENCE_CATEGORY_SYNONYMS.values()) <= set(PREFERENCE_CATEGORIES)
    assert not set(PREFERENCE_CATEGORY_SYNONYMS) & set(PREFERENCE_CATEGORIES)
    assert all(preference_category(c) == c for c in PREFERENCE_CATEGORIES)


#: Dot segments percent-encoded once, twice or three times, in any case (plain `.` and `..`
#: are resolved by every client and URL parser before a route sees them; the client refuses
#: to build them: tests/clients).
DOT_SEGMENTS = ["%2e", "%2E%2e", ".%2e", "%252e", "%252e%252e", "%25252E."]


@pytest.mark.parametrize("dots", DOT_SEGMENTS)
@pytest.mark.parametrize(
    ("method", "template"),
    [
        ("DELETE", "/v1/users/u/entities/campaign/{}"),
        ("DELETE", "/v1/users/u/entities/{}/campaign-alpha"),
        ("GET", "/v1/users/u/jobs/{}"),
        ("DELETE", "/v1/users/u/jobs/{}/"),
        ("DELETE", "/v1/users/{}"),
        ("DELETE", "/v1/admin/tokens/{}"),
    ],
)
async def test_a_dot_segment_is_refused_and_erases_nothing(
    api: httpx.AsyncClient, memkv: InMemoryKV, method: str, template: str, dots: str
) -> None:
    """Whatever the encoding, and with no redirect a client could resolve into the user's
    root (`.../jobs/%252e%252e/` answered 307 to `.../jobs/%2e%2e`, which is `/v1/users/u`)."""
    body = {"session_id": "s1", "entities": [CAMPAIGN]}
    assert (await api.put("/v1/users/u/entities", json=body, headers=BEARER)).status_code == 200
    raw = template.format(dots).encode()
    request = api.build_request(method, "http://t/", headers=BEARER)
    request.url = request.url.copy_with(raw_path=raw)
    r = await api.send(request, follow_redirects=False)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_id", (raw, r.text)
    assert "location" not in r.headers
    assert await memkv.get_json("entity:u:campaign:campaign-alpha") is not None


async def test_a_trailing_slash_is_not_redirected(api: httpx.AsyncClient) -> None:
    r = await api.get("/v1/users/u/entities/", headers=BEARER, follow_redirects=False)
    assert r.status_code == 404 and "location" not in r.headers
