"""The Worker end to end: HTTP into the local host (Pyodide), state checked in Miniflare's KV.

Each test uses its own user id, so tests share the session's host without sharing data.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from .conftest import Host
from .hostile import CONTENT_TYPES, chunked_upload, quadratic_body, short_body
from .hostproc import answers_indexed

pytestmark = pytest.mark.e2e

DAY_S = 24 * 60 * 60
TTL_DAYS = {"preference": 180, "pain_point": 180, "decision": 365, "campaign": 180, "metric": 180}

FIVE: list[dict[str, Any]] = [
    {
        "type": "campaign",
        "name": "Campaign Alpha",
        "content": "Search campaign; switched to target CPA $40 last Tuesday",
        "importance": 0.8,
        "metadata": {"strategy": "target CPA", "budget": 150, "status": "enabled"},
    },
    {
        "type": "metric",
        "name": "Alpha CPA",
        "content": "Cost per acquisition of Campaign Alpha is $42",
        "importance": 0.85,
        "metadata": {"kpi": "CPA", "value": 42, "unit": "USD", "campaign": "Campaign Alpha"},
    },
    {
        "type": "decision",
        "name": "Switch Alpha to tCPA",
        "content": "Moved Campaign Alpha from manual CPC to target CPA",
        "importance": 0.95,
        "metadata": {
            "action": "switch bidding",
            "rationale": "CPA above $45 on manual bids",
            "affectedEntities": ["campaign-alpha"],
            "reversible": True,
        },
    },
    {
        "type": "pain_point",
        "name": "Conversion tracking gaps",
        "content": "Conversions keep vanishing from reports after tag changes",
        "importance": 0.7,
        "metadata": {"severity": "high", "relatedCampaigns": ["campaign-alpha"]},
    },
    {
        "type": "preference",
        "name": "Numbers first",
        "content": "Lead with numbers, short bullets",
        "importance": 0.9,
        "metadata": {"category": "communication", "value": "numbers first"},
    },
]


def client(host: Host, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=host.base_url, timeout=60, headers=headers)


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"} and body["error"]["message"], body
    return body["error"]["code"]


def test_batch_of_five_types_lands_under_the_spec_keys(host: Host) -> None:
    before = int(time.time())
    with client(host) as c:
        r = c.put("/v1/users/e2e-five/entities", json={"session_id": "sess-1", "entities": FIVE})
        assert r.status_code == 200, r.text
        body = r.json()
        # Five entities in the request; the index write is the user's writer's, coalesced
        # with other writes of the user and made before this answer (X-Index-Writes), or
        # behind it with WRITE_ACK=committed.
        assert r.headers["x-kv-operations"] == "get=1,get_bulk=1,put=5"
        assert r.headers["x-index-writes"] == ("1" if answers_indexed() else "0")
        assert [(x["status"], x["version"]) for x in body["results"]] == [("created", 1)] * 5

        listed = host.kv_list("entity:e2e-five:")
        names = sorted(entry["name"] for entry in listed)
        assert names == [
            "entity:e2e-five:campaign:campaign-alpha",
            "entity:e2e-five:decision:switch-alpha-to-tcpa",
            "entity:e2e-five:metric:alpha-cpa",
            "entity:e2e-five:pain_point:conversion-tracking-gaps",
            "entity:e2e-five:preference:numbers-first",
        ]
        stored = {e["type"]: e for e in body["entities"]}
        for entry in listed:
            kind = entry["name"].split(":")[2]
            entity = stored[kind]
            assert entry["metadata"] == {
                "type": kind,
                "importance": entity["importance"],
                "updatedAt": entity["updatedAt"],
                "name": entity["name"],
            }
            ttl = TTL_DAYS[kind] * DAY_S
            assert before + ttl - 5 <= entry["expiration"] <= int(time.time()) + ttl + 5
            # What KV holds is exactly what the API returned and returns on GET.
            kv_doc = json.loads(host.kv_get(entry["name"]))
            assert kv_doc == entity
            got = c.get(f"/v1/users/e2e-five/entities/{kind}/{entity['id']}")
            assert got.status_code == 200 and got.json() == kv_doc
            assert kv_doc["userId"] == "e2e-five" and kv_doc["sessionId"] == "sess-1"
            assert kv_doc["version"] == 1 and kv_doc["createdAt"] == kv_doc["updatedAt"]
            assert before * 1000 - 5000 <= kv_doc["createdAt"] <= time.time() * 1000 + 5000

        index = json.loads(host.answered_index("e2e-five"))
        assert [(e["type"], e["id"]) for e in index["entries"]] == [
            (e["type"], e["id"]) for e in body["entities"]
        ]
        for entry, entity in zip(index["entries"], body["entities"], strict=True):
            assert entry["name"] == entity["name"]
            assert entry["importance"] == entity["importance"]
            assert entry["updatedAt"] == entity["updatedAt"]

        listing = c.get("/v1/users/e2e-five/entities").json()
        assert listing["count"] == 5
        assert c.get("/v1/users/e2e-five/entities?type=metric").json()["count"] == 1


def test_update_versions_and_idempotent_re_upsert(host: Host) -> None:
    with client(host) as c:
        first = c.put(
            "/v1/users/e2e-upd/entities", json={"session_id": "s1", "entities": FIVE[:1]}
        ).json()["entities"][0]
        same = c.put("/v1/users/e2e-upd/entities", json={"session_id": "s1", "entities": FIVE[:1]})
        assert same.json()["results"][0]["status"] == "unchanged"
        assert "put" not in same.headers["x-kv-operations"]
        changed = {**FIVE[0], "importance": 0.4, "metadata": {"strategy": "maximize conversions"}}
        r = c.put("/v1/users/e2e-upd/entities", json={"session_id": "s2", "entities": [changed]})
        entity = r.json()["entities"][0]
        assert entity["version"] == 2 and entity["createdAt"] == first["createdAt"]
        assert entity["importance"] == pytest.approx((0.8 + 0.4) / 2)
        assert entity["metadata"]["strategy"] == "maximize conversions"
        assert entity["metadata"]["budget"] == 150
        assert json.loads(host.kv_get("entity:e2e-upd:campaign:campaign-alpha")) == entity


def test_context_ranks_and_renders_the_block(host: Host) -> None:
    with client(host) as c:
        extra = {
            "type": "campaign",
            "name": "Brand Defense",
            "content": "Brand terms, tiny spend",
            "importance": 1.0,
        }
        c.put(
            "/v1/users/e2e-ctx/entities", json={"session_id": "s1", "entities": [*FIVE, extra]}
        ).raise_for_status()
        r = c.post(
            "/v1/users/e2e-ctx/context",
            json={"task": "Is the cost per acquisition on Alpha OK?", "explain": True, "limit": 4},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert r.headers["x-kv-operations"] == "get=1,get_bulk=1"
        names = [e["name"] for e in body["entities"]]
        assert len(names) == 4
        # Preference and pain point are always injected; Alpha's CPA beats the important but
        # unrelated Brand Defense.
        assert {"Numbers first", "Conversion tracking gaps", "Alpha CPA"} <= set(names)
        assert "Brand Defense" not in names
        assert [s["name"] for s in body["scores"]] == names
        assert body["context"].startswith("<entity_memory>\n\n### User Preferences\n")
        assert "- **Numbers first** (as of " in body["context"]
        assert "Lead with numbers, short bullets" in body["context"]
        assert body["context"].index("### Known Pain Points") < body["context"].index(
            "### Historical Metrics"
        )
        assert "- **Alpha CPA** (Campaign Alpha, as of " in body["context"]
        # The metric's line is its fields; its sentence says nothing more, so it is left out.
        line = next(x for x in body["context"].splitlines() if x.startswith("- **Alpha CPA**"))
        assert line.endswith(": [value $42]"), line
        assert body["context"].endswith("</entity_memory>")


def test_delete_removes_entity_and_index_entry(host: Host) -> None:
    with client(host) as c:
        c.put(
            "/v1/users/e2e-del/entities", json={"session_id": "s1", "entities": FIVE[:2]}
        ).raise_for_status()
        r = c.delete("/v1/users/e2e-del/entities/campaign/campaign-alpha")
        assert r.status_code == 200
        assert [k["name"] for k in host.kv_list("entity:e2e-del:")] == [
            "entity:e2e-del:metric:alpha-cpa"
        ]
        index = json.loads(host.answered_index("e2e-del"))
        assert [e["id"] for e in index["entries"]] == ["alpha-cpa"]
        assert error_code(c.get("/v1/users/e2e-del/entities/campaign/campaign-alpha")) == (
            "not_found"
        )
        gone = c.delete("/v1/users/e2e-del/entities/campaign/campaign-alpha")
        assert gone.status_code == 404 and error_code(gone) == "not_found"


def test_error_codes_and_shapes(host: Host) -> None:
    with client(host) as c:
        c.put(
            "/v1/users/e2e-err/entities", json={"session_id": "s1", "entities": FIVE[:1]}
        ).raise_for_status()
        r = c.get("/v1/users/a:b/entities")
        assert (r.status_code, error_code(r)) == (400, "invalid_id")
        r = c.get("/v1/users/e2e-err/entities/keyword/x")
        assert (r.status_code, error_code(r)) == (400, "invalid_type")
        bad = {**FIVE[4], "metadata": {"category": "mood", "value": "x"}}
        r = c.put(
            "/v1/users/e2e-err/entities", json={"session_id": "s2", "entities": [FIVE[1], bad]}
        )
        assert (r.status_code, error_code(r)) == (422, "invalid_entity")
        r = c.put(
            "/v1/users/e2e-err/entities",
            json={"session_id": "s2", "entities": [{**FIVE[1], "id": "x:y"}]},
        )
        assert (r.status_code, error_code(r)) == (400, "invalid_id")
        r = c.put(
            "/v1/users/e2e-err/entities", json={"session_id": "s2", "entities": [FIVE[1]] * 101}
        )
        assert (r.status_code, error_code(r)) == (413, "too_large")
        r = c.put(
            "/v1/users/e2e-err/entities",
            content=b"x" * (1024 * 1024 + 1),
            headers={"content-type": "application/json"},
        )
        assert (r.status_code, error_code(r)) == (413, "too_large")
        r = c.put(
            "/v1/users/e2e-err/entities",
            content=b"{oops",
            headers={"content-type": "application/json"},
        )
        assert (r.status_code, error_code(r)) == (400, "invalid_json")
        r = c.get("/v1/users/e2e-err/entities/campaign/missing")
        assert (r.status_code, error_code(r)) == (404, "not_found")
        # None of the rejected requests stored anything.
        assert [k["name"] for k in host.kv_list("entity:e2e-err:")] == [
            "entity:e2e-err:campaign:campaign-alpha"
        ]


def test_openapi_is_served(host: Host) -> None:
    with client(host) as c:
        spec = c.get("/openapi.json").json()
    assert "/v1/users/{user_id}/context" in spec["paths"]
    assert spec["info"]["title"] == "entity-memory"


# --- hostile input (issue 39) ------------------------------------------------------------------


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
def test_depth_6000_is_400_under_any_content_type_and_the_host_lives(
    host: Host, content_type: str | None
) -> None:
    """`application/JSON` bodies skipped the depth check and FastAPI parsed them: the host
    died (`Maximum call stack size exceeded`)."""
    headers = {"content-type": content_type} if content_type else {}
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        for path in ("/v1/users/e2e-deep/context", "/v1/users/e2e-deep/expired"):
            r = c.post(path, content="[" * 6000 + "]" * 6000, headers=headers)
            assert r.status_code == 400 and r.json()["error"]["code"] == "json_too_deep", r.text
        assert c.get("/healthz").status_code == 200


@pytest.mark.parametrize("size", [32 * 1024, 1024 * 1024])
def test_the_escaped_quote_bodies_are_answered_and_the_host_stays_free(
    host: Host, size: int
) -> None:
    """32 KB took 11 s (and `/healthz` waited); 1 MiB would have taken hours. The timeout is a
    hang guard; bench.hostile_bodies reports the times."""
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        headers = {"content-type": "application/json"}
        r = c.post("/v1/users/e2e-quad/context", content=quadratic_body(size), headers=headers)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", r.text
        assert c.get("/healthz").status_code == 200


def test_a_chunked_upload_over_the_cap_is_cut_while_reading(host: Host) -> None:
    """The host read all of a 256 MiB upload (504 MB to 1,414 MB) before answering 413; now it
    answers once the cap is passed and reads no more."""
    status, sent = chunked_upload(host.base_url, "/v1/users/e2e-big/context", 256 * 1024 * 1024)
    assert status == 413
    assert sent < 64 * 1024 * 1024, sent  # the kernel's buffers, not the whole upload
    assert httpx.get(f"{host.base_url}/healthz", timeout=60).status_code == 200


def test_a_body_shorter_than_declared_gets_an_answer(host: Host) -> None:
    """`Content-Length: 999999999` with 2 bytes held a connection 30 s and more, unanswered."""
    assert short_body(host.base_url, "/v1/users/e2e-short/context", 999_999_999, b"{}") == 413
    assert short_body(host.base_url, "/v1/users/e2e-short/context", 100, b"{}") == 408


def test_a_double_encoded_dot_job_is_refused_not_redirected_to_the_user(host: Host) -> None:
    """`DELETE .../jobs/%252e%252e/` answered 307 to `.../jobs/%2e%2e`: the user's root."""
    body = {"session_id": "s1", "entities": [{"type": "campaign", "name": "Alpha"}]}
    with httpx.Client(base_url=host.base_url, timeout=60, follow_redirects=False) as c:
        assert c.put("/v1/users/e2e-dots/entities", json=body).status_code == 200
        for path in ("/v1/users/e2e-dots/jobs/%252e%252e/", "/v1/users/e2e-dots/jobs/%252e%252e"):
            r = c.delete(path)
            assert 400 <= r.status_code < 500 and "location" not in r.headers, (path, r.text)
        assert c.get("/v1/users/e2e-dots/entities").json()["count"] == 1
