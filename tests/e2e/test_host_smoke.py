"""Smoke tests of the local host: it serves the Worker, and KV round-trips through the binding."""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
import pytest

from .conftest import Host

pytestmark = pytest.mark.e2e


def test_healthz(host: Host) -> None:
    response = httpx.get(f"{host.base_url}/healthz", timeout=30)
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


async def test_concurrent_requests_are_served(host: Host) -> None:
    # Pyodide is single threaded; interleaved requests must each get their own response.
    async with httpx.AsyncClient(base_url=host.base_url, timeout=60) as client:
        responses = await asyncio.gather(*(client.get("/healthz") for _ in range(20)))
    assert [r.status_code for r in responses] == [200] * 20
    assert all(r.json()["status"] == "ok" for r in responses)


def test_scheduled_hook_answers_json(host: Host) -> None:
    response = httpx.get(f"{host.base_url}/__scheduled", params={"cron": "*/5 * * * *"}, timeout=60)
    body = response.json()
    if response.status_code == 404:
        assert body["error"]["code"] == "no_scheduled_handler"
    else:
        assert response.status_code == 200, body
        assert body["outcome"] == "ok" and body["cron"] == "*/5 * * * *"


def test_kv_selftest_round_trips_through_the_real_binding(host: Host) -> None:
    started = int(time.time())
    done = host.run_host("--selftest-kv")
    assert done.returncode == 0, f"selftest failed:\n{done.stdout}\n{done.stderr}"
    assert "kv selftest ok" in done.stdout
    kept = re.search(r"kv selftest kept (\S+)", done.stdout)
    assert kept, done.stdout
    key = kept[1]

    # What the Worker wrote is what `wrangler kv ... --local` sees in the same state.
    listed = host.kv_list(key)
    assert [entry["name"] for entry in listed] == [key]
    assert listed[0]["metadata"] == {
        "type": "campaign",
        "importance": 0.8,
        "updatedAt": 1700000000000,
        "name": "Brand",
    }
    assert started + 3600 - 5 <= listed[0]["expiration"] <= int(time.time()) + 3600 + 5

    assert json.loads(host.kv_get(key)) == {
        "name": "Brand Search",
        "n": 3,
        "ratio": 0.25,
        "tags": ["a", "b"],
        "nested": {"x": None},
    }
    # The selftest deleted its other keys.
    prefix = key.rsplit(":", 1)[0] + ":"
    assert [entry["name"] for entry in host.kv_list(prefix)] == [key]


def test_a_malformed_host_header_is_a_400(host: Host) -> None:
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(host.base_url)
    with socket.create_connection((where.hostname, where.port), timeout=60) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.split(b"\r\n", 1)[0].split(b" ")[1] in (b"400",), reply[:200]
    assert httpx.get(f"{host.base_url}/healthz", timeout=60).status_code == 200
