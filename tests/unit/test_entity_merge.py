"""Edits and merges that name the version they saw (service/entity_merge.py): a stale edit
is refused instead of undoing a newer write; two opposite merges at once leave one entity;
long ids, many aliases and forged merge sessions are handled."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from entity_memory.domain.keys import MAX_ID_LENGTH
from entity_memory.domain.models import MAX_ALIASES

U = "/v1/users/ed"


def campaign(name: str, **fields: Any) -> dict[str, Any]:
    return {"type": "campaign", "name": name, "content": f"{name} runs on search", **fields}


async def put(c: httpx.AsyncClient, *docs: dict[str, Any], **body: Any) -> httpx.Response:
    return await c.put(f"{U}/entities", json={"session_id": "s1", "entities": docs, **body})


async def get(c: httpx.AsyncClient, entity_id: str) -> httpx.Response:
    return await c.get(f"{U}/entities/campaign/{entity_id}")


async def merge(
    c: httpx.AsyncClient, keep: str, other: str, version: int = 1, other_version: int = 1
) -> httpx.Response:
    body = {"other": other, "version": version, "other_version": other_version}
    return await c.post(f"{U}/entities/campaign/{keep}/merge", json=body)


async def test_a_stale_edit_is_refused_and_the_newer_write_kept(client: httpx.AsyncClient) -> None:
    assert (await put(client, campaign("Lantern", metadata={"strategy": "manual CPC"}))).is_success
    newer = campaign("Lantern", metadata={"strategy": "target CPA"})
    assert (await put(client, newer)).json()["results"][0]["version"] == 2
    # The page loaded version 1 and edits the budget: its body still says manual CPC.
    edit = campaign("Lantern", metadata={"strategy": "manual CPC", "budget": 80})
    expected = [{"type": "campaign", "id": "lantern", "version": 1}]
    r = await put(client, edit, expected_versions=expected)
    assert r.status_code == 409, r.text
    error = r.json()["error"]
    assert error["code"] == "version_conflict"
    assert error["details"] == {
        "type": "campaign",
        "id": "lantern",
        "expectedVersion": 1,
        "currentVersion": 2,
    }
    stored = (await get(client, "lantern")).json()
    assert stored["version"] == 2 and stored["metadata"]["strategy"] == "target CPA"
    # Based on the current version, the same edit goes through.
    fresh = [{"type": "campaign", "id": "lantern", "version": 2}]
    assert (await put(client, edit, expected_versions=fresh)).status_code == 200


async def test_version_zero_means_the_entity_must_not_exist(client: httpx.AsyncClient) -> None:
    absent = [{"type": "campaign", "id": "ember", "version": 0}]
    assert (await put(client, campaign("Ember"), expected_versions=absent)).status_code == 200
    again = await put(client, campaign("Ember", importance=0.9), expected_versions=absent)
    assert again.status_code == 409


async def test_a_merge_keeps_one_entity_with_the_others_name(client: httpx.AsyncClient) -> None:
    assert (await put(client, campaign("Harbor"), campaign("Harbour Lights"))).is_success
    r = await merge(client, "harbor", "harbour-lights")
    assert r.status_code == 200, r.text
    body = r.json()
    assert "Harbour Lights" in body["entity"]["aliases"]
    assert body["merged"] == {"type": "campaign", "id": "harbour-lights"}
    assert body["droppedAliases"] == []
    assert (await get(client, "harbour-lights")).status_code == 404
    history = (await client.get(f"{U}/entities/campaign/harbor/history")).json()["versions"]
    assert body["sessionId"] in {v["sessionId"] for v in history}


async def test_opposite_merges_at_once_leave_one_entity(client: httpx.AsyncClient) -> None:
    assert (await put(client, campaign("Quarry"), campaign("Quarry Two"))).is_success
    one, two = await asyncio.gather(
        merge(client, "quarry", "quarry-two"), merge(client, "quarry-two", "quarry")
    )
    assert sorted([one.status_code, two.status_code]) == [200, 404]
    left = [i for i in ("quarry", "quarry-two") if (await get(client, i)).status_code == 200]
    assert len(left) == 1


async def test_a_merge_with_a_stale_version_changes_nothing(client: httpx.AsyncClient) -> None:
    assert (await put(client, campaign("Cove"), campaign("Cove East"))).is_success
    assert (await put(client, campaign("Cove East", importance=0.9))).is_success  # now v2
    r = await merge(client, "cove", "cove-east", version=1, other_version=1)
    assert r.status_code == 409 and r.json()["error"]["code"] == "version_conflict"
    assert (await get(client, "cove-east")).status_code == 200
    assert (await get(client, "cove")).json()["aliases"] == []


async def test_an_entity_with_a_long_id_can_be_merged(client: httpx.AsyncClient) -> None:
    long_id = "x" * MAX_ID_LENGTH
    assert (await put(client, campaign("Dune"), campaign("Dune Far", id=long_id))).is_success
    r = await merge(client, "dune", long_id)
    assert r.status_code == 200, r.text
    assert len(r.json()["sessionId"]) <= MAX_ID_LENGTH
    assert (await get(client, long_id)).status_code == 404


async def test_aliases_past_the_cap_are_left_out_and_named(client: httpx.AsyncClient) -> None:
    mine = [f"Reef {i}" for i in range(15)]
    theirs = [f"Atoll {i}" for i in range(10)]
    keep, other = campaign("Reef", aliases=mine), campaign("Atoll", aliases=theirs)
    assert (await put(client, keep, other)).is_success
    r = await merge(client, "reef", "atoll")
    assert r.status_code == 200, r.text
    body = r.json()
    aliases = body["entity"]["aliases"]
    assert len(aliases) == MAX_ALIASES
    assert set(mine) <= set(aliases) and "Atoll" in aliases  # the other's name first in line
    assert body["droppedAliases"] == theirs[MAX_ALIASES - len(mine) - 1 :]


async def test_no_other_write_may_use_the_merge_session_prefix(
    client: httpx.AsyncClient,
) -> None:
    body = {"session_id": "inspector-merge.harbor", "entities": [campaign("Mole")]}
    r = await client.put(f"{U}/entities", json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == "reserved_session"
    talk = {"messages": [{"role": "user", "content": "The Mole campaign is live."}]}
    r = await client.post(f"{U}/sessions/inspector-merge.mole/extract", json=talk)
    assert r.status_code == 400 and r.json()["error"]["code"] == "reserved_session"
    assert (await get(client, "mole")).status_code == 404


async def test_an_entity_cannot_be_merged_into_itself(client: httpx.AsyncClient) -> None:
    assert (await put(client, campaign("Spit"))).is_success
    r = await merge(client, "spit", "spit")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_merge"


async def test_a_merge_naming_an_entity_that_is_gone_is_not_found(
    client: httpx.AsyncClient,
) -> None:
    assert (await put(client, campaign("Ferry"), campaign("Ferry North"))).is_success
    assert (await merge(client, "ferry", "ferry-north")).status_code == 200
    # The page still shows Ferry North at version 1: it is gone, whatever version it names.
    again = await merge(client, "ferry", "ferry-north", version=2, other_version=1)
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"
    assert "ferry-north" in again.json()["error"]["message"]
    kept_gone = await merge(client, "ferry-west", "ferry", version=1, other_version=2)
    assert kept_gone.status_code == 404 and "ferry-west" in kept_gone.json()["error"]["message"]
    assert (await get(client, "ferry")).json()["version"] == 2
