"""A sixth kind, registered by this test alone (issue 35): stored, retrieved, merged and
rendered with no other file changed. An "audience" (a group of people an ad is shown to) has
a size and a region, is linked to the campaigns that target it, and shows its size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

import httpx
import pytest
from pydantic import Field

from entity_memory.domain.keys import entity_key
from entity_memory.domain.kind import EntityKind, ImportanceBands, register, unregister
from entity_memory.domain.kinds import BUILT_IN
from entity_memory.domain.models import BaseEntity, CamelModel, EntityInputBase, ShortText
from entity_memory.extraction.validate import validate_candidates
from entity_memory.http.schemas import UpsertBody
from entity_memory.service.context_block import context_block
from entity_memory.service.retrieval import retrieve_for_context
from entity_memory.storage.kv import CountingKV, InMemoryKV
from entity_memory.storage.store import EntityStore
from entity_memory.web.kinds_js import kinds_module
from tests.unit.conftest import DAY, T0, Clock, upsert_one
from tests.unit.factories import campaign


class AudienceMetadata(CamelModel):
    size: Annotated[int, Field(ge=0)] | None = None
    region: ShortText | None = None
    campaigns: list[ShortText] = Field(default_factory=list)


class AudienceInput(EntityInputBase):
    type: Literal["audience"]
    metadata: AudienceMetadata = Field(default_factory=AudienceMetadata)


class AudienceEntity(BaseEntity):
    type: Literal["audience"] = "audience"
    metadata: AudienceMetadata = Field(default_factory=AudienceMetadata)


AUDIENCE = EntityKind(
    type="audience",
    entity_model=AudienceEntity,
    input_model=AudienceInput,
    metadata_model=AudienceMetadata,
    importance=ImportanceBands(extracted=0.6, detected=0.6),
    label="Known Audiences",
    section=5,
    member_label="audience",
    shown_fields=("size", "region"),
    known_facts=("size", "region"),
    offered_fields=("size", "region"),
    campaign_fields=("campaigns",),
)


@pytest.fixture(autouse=True)
def audience_kind() -> Iterator[EntityKind]:
    register(AUDIENCE)
    yield AUDIENCE
    unregister(AUDIENCE.type)


def audience(
    size: int | None = 12000, content: str = "", campaigns: tuple[str, ...] = ()
) -> AudienceInput:
    return AudienceInput(
        type="audience",
        name="Weekend cyclists",
        content=content,
        importance=0.6,
        metadata=AudienceMetadata(size=size, region="North coast", campaigns=list(campaigns)),
    )


async def test_a_registered_kind_is_stored_under_its_key_and_read_back(
    store: EntityStore, kv: CountingKV
) -> None:
    result = await upsert_one(store, "u1", audience(), "s1")
    assert result.status == "created"
    assert result.key == entity_key("u1", "audience", "weekend-cyclists")
    stored = await store.get("u1", "audience", "weekend-cyclists")
    assert isinstance(stored, AudienceEntity)
    assert stored.metadata.size == 12000 and stored.version == 1
    index = await store.read_index("u1")
    assert [(e.type, e.id) for e in index.entries] == [("audience", "weekend-cyclists")]


async def test_a_registered_kind_merges_like_any_other(store: EntityStore, clock: Clock) -> None:
    await upsert_one(store, "u1", audience(content="A crowd of about 12,000 cyclists."), "s1")
    clock.advance(DAY)
    again = await upsert_one(store, "u1", audience(size=15000), "s2")
    assert again.status == "updated" and again.entity.version == 2
    assert again.entity.created_at == T0
    assert again.entity.metadata.size == 15000  # type: ignore[attr-defined]
    assert again.entity.metadata.region == "North coast"  # type: ignore[attr-defined]
    # The stored sentence stated the old size: a shown field changed, so it is dropped.
    assert again.entity.content == ""
    same = await upsert_one(store, "u1", audience(size=15000), "s3")
    assert same.status == "unchanged"


async def test_a_registered_kind_is_retrieved_and_rendered_in_its_section(
    store: EntityStore,
) -> None:
    await upsert_one(store, "u1", campaign(), "s1")
    await upsert_one(store, "u1", audience(), "s1")
    task = "Campaign Alpha for the weekend cyclists"
    found = await retrieve_for_context(store, "u1", task)
    assert {e.type for e in found.entities} == {"campaign", "audience"}
    block = context_block(found, task, 2000)
    line = next(x for x in block.splitlines() if "**Weekend cyclists**" in x)
    assert line.startswith("- ") and "size 12000" in line and "region North coast" in line
    assert block.index("### Known Audiences") > block.index("### Known Campaigns")


async def test_a_registered_kind_links_to_the_campaign_its_fields_name(
    store: EntityStore,
) -> None:
    await upsert_one(store, "u1", campaign(), "s1")
    await upsert_one(store, "u1", audience(campaigns=("Campaign Alpha",)), "s1")
    task = "Campaign Alpha for the weekend cyclists"
    found = await retrieve_for_context(store, "u1", task)
    block = context_block(found, task, 2000)
    lines = block.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("- **Campaign Alpha**"))
    assert lines[at + 1].startswith("  - audience **Weekend cyclists**")
    assert "### Known Audiences" not in block


def test_an_extractor_candidate_of_a_registered_kind_validates() -> None:
    raw = {"type": "audience", "name": "Weekend cyclists", "metadata": {"size": 900}}
    accepted, rejected = validate_candidates([raw, {**raw, "type": "unheard_of"}])
    assert [a.type for a in accepted] == ["audience"]  # type: ignore[attr-defined]
    assert rejected and "unknown type" in rejected[0]["reason"]


async def test_a_registered_kind_lives_its_ttl_and_shows_in_the_inspector(
    store: EntityStore, memkv: InMemoryKV
) -> None:
    result = await upsert_one(store, "u1", audience(), "s1")
    assert memkv.expiration_of(result.key) == (T0 + AUDIENCE.ttl_days * DAY) // 1000
    module = kinds_module()
    assert '"audience"' in module and '"audience": "Audiences"' in module


async def test_a_registered_kind_is_put_and_read_back_over_http(
    client: httpx.AsyncClient,
) -> None:
    """The PUT body takes any registered kind, validated by that kind's model, through the
    user's writer (the twin's JSON boundary, as the Durable Object's), and GET returns it."""
    sent = audience(campaigns=("Campaign Alpha",)).to_json_dict()
    resp = await client.put("/v1/users/u1/entities", json={"session_id": "s1", "entities": [sent]})
    assert resp.status_code == 200, resp.text
    [written] = resp.json()["entities"]
    assert written["type"] == "audience" and written["metadata"]["size"] == 12000
    resp = await client.get("/v1/users/u1/entities/audience/weekend-cyclists")
    assert resp.status_code == 200, resp.text
    got = resp.json()
    assert got["metadata"] == {
        "size": 12000,
        "region": "North coast",
        "campaigns": ["Campaign Alpha"],
    }
    assert got["version"] == 1 and got["name"] == "Weekend cyclists"


async def test_a_put_of_a_registered_kind_is_checked_by_its_model_and_an_unknown_type_refused(
    client: httpx.AsyncClient,
) -> None:
    def body(entity: dict[str, object]) -> dict[str, object]:
        return {"session_id": "s1", "entities": [entity]}

    bad_size = {"type": "audience", "name": "Weekend cyclists", "metadata": {"size": -5}}
    resp = await client.put("/v1/users/u1/entities", json=body(bad_size))
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "invalid_entity"
    assert resp.json()["error"]["details"][0]["loc"] == [
        "entities",
        0,
        "audience",
        "metadata",
        "size",
    ]
    unknown = {"type": "keyword", "name": "running shoes"}
    resp = await client.put("/v1/users/u1/entities", json=body(unknown))
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "invalid_entity"
    message = resp.json()["error"]["message"]
    assert "'keyword'" in message and "'audience'" in message  # the kinds it could have been
    assert (await client.get("/v1/users/u1/entities")).json()["count"] == 0


def test_the_published_put_schema_lists_the_built_in_kinds() -> None:
    """The API's schema stays the built-in union (clients generate from it); a registered
    kind is accepted without changing what is published."""
    schema = UpsertBody.model_json_schema()
    tags = schema["properties"]["entities"]["items"]["discriminator"]["mapping"]
    assert sorted(tags) == sorted(k.type for k in BUILT_IN)
