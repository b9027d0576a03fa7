"""Auth on the real host: with API_TOKEN set, /v1 needs the bearer token; /healthz does not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .hostproc import Host, HostError, start_host

pytestmark = pytest.mark.e2e
TOKEN = "e2e-secret-token-0123456789"


@pytest.fixture(scope="module")
def auth_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    persist_dir: Path = tmp_path_factory.mktemp("wrangler-auth") / "v3"
    try:
        with start_host(persist_dir, ["--var", f"API_TOKEN={TOKEN}"]) as running:
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
