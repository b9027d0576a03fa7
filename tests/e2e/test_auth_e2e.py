"""Auth on the real host: with API_TOKEN set, /v1 needs the bearer token; /healthz does not."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .hostproc import REPO, Host, HostError, start_host

pytestmark = pytest.mark.e2e
TOKEN = "e2e-secret-token-0123456789"


#: The per-token budget this host runs with: small, so the test reaches it in a few requests
#: (wrangler.toml's production budget is 600 a minute).
RATE_LIMIT = 25


def small_budget_config(folder: Path) -> Path:
    """wrangler.toml with the `[[ratelimits]]` budget cut to RATE_LIMIT."""
    text = (REPO / "wrangler.toml").read_text()
    smaller, count = re.subn(
        r"simple = \{ limit = \d+,", f"simple = {{ limit = {RATE_LIMIT},", text
    )
    assert count == 1, "wrangler.toml's [[ratelimits]] entry changed shape"
    config = folder / "wrangler.toml"
    config.write_text(smaller)
    return config


@pytest.fixture(scope="module")
def auth_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    state = tmp_path_factory.mktemp("wrangler-auth")
    args = ["--var", f"API_TOKEN={TOKEN}", "--config", str(small_budget_config(state))]
    try:
        with start_host(state / "v3", args) as running:
            yield running
    except HostError as exc:
        pytest.fail(str(exc))


def test_token_is_required_on_v1_when_set(auth_host: Host) -> None:
    with httpx.Client(base_url=auth_host.base_url, timeout=60) as c:
        assert c.get("/healthz").status_code == 200
        for headers in (
            {},
            {"Authorization": "Bearer nope"},
            {"Authorization": TOKEN},
            {"Authorization": f"Basic {TOKEN}"},
        ):
            r = c.get("/v1/users/u1/entities", headers=headers)
            assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        r = c.put("/v1/users/u1/entities", json={"session_id": "s", "entities": []})
        assert r.status_code == 401
        ok = c.get("/v1/users/u1/entities", headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and ok.json() == {"entities": [], "count": 0}


def test_auth_is_off_without_token(host: Host) -> None:
    r = httpx.get(f"{host.base_url}/v1/users/u1/entities", timeout=60)
    assert r.status_code == 200


def test_user_tokens_are_scoped_revocable_and_rate_limited(auth_host: Host) -> None:
    admin = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=auth_host.base_url, timeout=60) as c:
        r = c.post("/v1/admin/tokens", json={"user_id": "ann", "label": "agent"}, headers=admin)
        assert r.status_code == 201, r.text
        minted = r.json()
        ann = {"Authorization": f"Bearer {minted['token']}"}
        rows = auth_host.d1("SELECT user_id, token_hash FROM api_tokens")
        assert [row["user_id"] for row in rows] == ["ann"]
        assert minted["token"] not in json.dumps(rows)
        put = c.put(
            "/v1/users/ann/entities",
            json={"session_id": "s1", "entities": [{"type": "campaign", "name": "Alpha"}]},
            headers=ann,
        )
        assert put.status_code == 200, put.text
        assert c.get("/v1/users/bob/entities", headers=ann).status_code == 403
        assert c.delete("/v1/users/bob", headers=ann).status_code == 403
        assert c.get("/v1/users/ann/export", headers=ann).status_code == 200
        # The binding's budget ends in a 429. Its windows are fixed, so a window may turn over
        # mid-test: look for the first 429 within two windows' worth. The 2 requests above
        # that passed the scope check are in the same budget.
        assert first_429(auth_host.base_url, ann, limit=2 * RATE_LIMIT + 10) >= RATE_LIMIT - 2
        limited = c.get("/v1/users/ann/entities", headers=ann)
        assert limited.json()["error"]["code"] == "rate_limited"
        assert limited.headers["retry-after"] == "60"
        revoke = c.delete(f"/v1/admin/tokens/{minted['tokenId']}", headers=admin)
        assert revoke.status_code == 200
        assert c.get("/v1/users/ann/entities", headers=ann).status_code == 401


def first_429(base_url: str, headers: dict[str, str], limit: int) -> int:
    """How many requests succeeded before the first 429 (fails if none came)."""

    async def run() -> int:
        ok = 0
        async with httpx.AsyncClient(base_url=base_url, timeout=60, headers=headers) as ac:
            while ok < limit:
                wave = await asyncio.gather(*(ac.get("/v1/users/ann/entities") for _ in range(5)))
                codes = [r.status_code for r in wave]
                assert set(codes) <= {200, 429}, codes
                if 429 in codes:  # a wave runs concurrently: count its successes
                    return ok + codes.count(200)
                ok += len(codes)
        raise AssertionError(f"no 429 after {ok} requests")

    return asyncio.run(run())


def test_scheduled_needs_the_admin_token_when_set(auth_host: Host) -> None:
    with httpx.Client(base_url=auth_host.base_url, timeout=120) as c:
        for headers in ({}, {"Authorization": "Bearer nope"}):
            r = c.get("/__scheduled", headers=headers)
            assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        r = c.get("/__scheduled", headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200


def test_deep_nesting_is_a_4xx_and_the_host_stays_up(auth_host: Host) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    with httpx.Client(base_url=auth_host.base_url, timeout=120) as c:
        for body in ("[" * 6000 + "]" * 6000, '{"a":' * 5000 + "1" + "}" * 5000):
            r = c.put("/v1/users/u1/entities", content=body, headers=headers)
            assert r.status_code == 400 and r.json()["error"]["code"] == "json_too_deep"
            r = c.post("/v1/users/u1/context", content=body, headers=headers)
            assert r.status_code == 400
        assert c.get("/healthz").status_code == 200
        entity = {"type": "campaign", "name": "Campaign Nu", "content": "x", "importance": 0.5}
        big = {
            "type": "pain_point",
            "name": "Big",
            "content": "x",
            "importance": 0.5,
            "metadata": {"frequency": 2**64},
        }
        r = c.put(
            "/v1/users/u1/entities",
            headers=headers,
            json={"session_id": "s", "entities": [entity, big]},
        )
        assert r.status_code == 422
        r = c.put(
            "/v1/users/u1/entities", headers=headers, json={"session_id": "s", "entities": [entity]}
        )
        assert r.status_code == 200
