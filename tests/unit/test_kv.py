import json

import pytest

from entity_memory.storage.kv import CountingKV, InMemoryKV, KVError

from .conftest import Clock


async def test_put_get_with_metadata_and_expiry(memkv: InMemoryKV, clock: Clock) -> None:
    await memkv.put("k", json.dumps({"a": 1}), expiration_ttl=60, metadata={"m": 2})
    assert await memkv.get_json("k") == {"a": 1}
    assert await memkv.get_with_metadata("k") == ({"a": 1}, {"m": 2})
    assert memkv.expiration_of("k") == (clock.now + 60_000) // 1000
    clock.advance(60_000)
    assert await memkv.get_json("k") is None
    assert (await memkv.list()).keys == []


async def test_bulk_get_maps_missing_keys_to_none_and_caps_at_100(memkv: InMemoryKV) -> None:
    await memkv.put("a", "1")
    assert await memkv.get_json_many(["a", "b"]) == {"a": 1, "b": None}
    with pytest.raises(KVError):
        await memkv.get_json_many([str(i) for i in range(101)])


async def test_list_is_sorted_prefixed_and_paged(memkv: InMemoryKV) -> None:
    for name in ["u:3", "u:1", "v:1", "u:2"]:
        await memkv.put(name, "0", metadata={"n": name})
    page = await memkv.list(prefix="u:", limit=2)
    assert [k.name for k in page.keys] == ["u:1", "u:2"]
    assert page.keys[0].metadata == {"n": "u:1"}
    assert not page.list_complete and page.cursor
    rest = await memkv.list(prefix="u:", limit=2, cursor=page.cursor)
    assert [k.name for k in rest.keys] == ["u:3"] and rest.list_complete


@pytest.mark.parametrize(
    "kwargs",
    [{"expiration_ttl": 59}, {"metadata": {"x": "y" * 1100}}],
)
async def test_refuses_what_workers_kv_refuses(memkv: InMemoryKV, kwargs: dict) -> None:
    with pytest.raises(KVError):
        await memkv.put("k", "1", **kwargs)
    with pytest.raises(KVError):
        await memkv.put("k" * 513, "1")


async def test_counting_kv_counts_by_operation(memkv: InMemoryKV) -> None:
    kv = CountingKV(memkv)
    await kv.put("a", "1")
    await kv.get_json("a")
    await kv.get_json_many(["a", "b"])
    await kv.delete("a")
    await kv.list(prefix="")
    assert dict(kv.ops) == {"put": 1, "get": 1, "get_bulk": 1, "delete": 1, "list": 1}
    assert kv.reads == 2 and kv.writes == 2
    assert kv.summary() == "delete=1,get=1,get_bulk=1,list=1,put=1"
