"""`host.mjs --selftest-kv`: exercise every `WorkersKV` method against the real KV binding.

Run inside Pyodide with the env the host hands the Worker, so it covers the whole chain the
Worker uses: class-name fix -> SDK conversions -> adapters.workers -> Miniflare's KV. It leaves
one key behind (returned) so a test can read it back with `wrangler kv key get/list --local`.
"""

import json
import time
import uuid

from workers.rpc import _EnvWrapper

from adapters.workers import WorkersKV, bind
from entity_memory.storage.kv import KVError, KVListPage


def _check(condition, message):
    if not condition:
        raise AssertionError(message)


def _assert_plain(value, where):
    """Values and metadata must be plain Python (no JsProxy, no JsDict)."""
    if isinstance(value, dict):
        _check(type(value) is dict, f"{where}: {type(value)!r} is not a plain dict")
        for k, v in value.items():
            _assert_plain(v, f"{where}.{k}")
    elif isinstance(value, list):
        _check(type(value) is list, f"{where}: {type(value)!r} is not a plain list")
        for i, v in enumerate(value):
            _assert_plain(v, f"{where}[{i}]")
    else:
        _check(
            value is None or type(value) in (str, int, float, bool),
            f"{where}: {type(value)!r} is not a JSON scalar",
        )


async def run(js_env):
    env = _EnvWrapper(js_env)  # what `self.env` is inside the Worker
    bindings = bind(env)
    kv = bindings.kv
    _check(isinstance(kv, WorkersKV), "bind() must use WorkersKV")
    _check(
        bindings.settings.api_token is None or isinstance(bindings.settings.api_token, str),
        "api_token must be a string or None",
    )

    run_id = f"{int(time.time())}-{uuid.uuid4().hex[:8]}"
    prefix = f"selftest:{run_id}:"
    doc = {"name": "Brand Search", "n": 3, "ratio": 0.25, "tags": ["a", "b"], "nested": {"x": None}}
    meta = {"type": "campaign", "importance": 0.8, "updatedAt": 1700000000000, "name": "Brand"}

    kept = prefix + "kept"
    before = int(time.time())
    await kv.put(kept, json.dumps(doc), expiration_ttl=3600, metadata=meta)
    for i in range(4):
        await kv.put(f"{prefix}item:{i}", json.dumps({"i": i}), metadata={"i": i})
    await kv.put(prefix + "plain", json.dumps([1, 2]))

    got = await kv.get_json(kept)
    _check(got == doc, f"get_json: {got!r} != {doc!r}")
    _assert_plain(got, "get_json")
    _check(await kv.get_json(prefix + "missing") is None, "get_json of a missing key is None")

    many = await kv.get_json_many([kept, prefix + "missing", prefix + "plain"])
    _check(type(many) is dict, f"get_json_many returns {type(many)!r}")
    _check(list(many) == [kept, prefix + "missing", prefix + "plain"], f"keys: {list(many)}")
    _check(
        many[kept] == doc and many[prefix + "missing"] is None and many[prefix + "plain"] == [1, 2],
        f"get_json_many: {many!r}",
    )
    _assert_plain(many, "get_json_many")
    _check(await kv.get_json_many([]) == {}, "get_json_many([]) is {}")

    for refused in (
        kv.get_json_many([f"{prefix}{i}" for i in range(101)]),
        kv.put(prefix + "short", "1", expiration_ttl=30),
    ):
        try:
            await refused
        except KVError:
            pass
        else:
            raise AssertionError("WorkersKV must refuse what KV refuses, with KVError")

    listed = {k.name: k.metadata for k in (await kv.list(prefix=prefix)).keys}
    _check(listed.get(kept) == meta, f"list metadata: {listed.get(kept)!r}")
    _assert_plain(listed.get(kept), "list metadata")
    _check(prefix + "plain" in listed and listed[prefix + "plain"] is None, "no metadata -> None")

    # Paging: 6 keys under the prefix, 4 under item:, read 3 at a time.
    names, cursor, pages = [], None, 0
    while True:
        page = await kv.list(prefix=prefix + "item:", limit=3, cursor=cursor)
        _check(isinstance(page, KVListPage), "list returns KVListPage")
        pages += 1
        for key in page.keys:
            _check(key.metadata == {"i": int(key.name.rsplit(":", 1)[1])}, f"list metadata {key}")
            _assert_plain(key.metadata, "list.metadata")
            _check(key.expiration is None, f"no TTL -> expiration None: {key}")
        names += [key.name for key in page.keys]
        if page.list_complete:
            _check(page.cursor is None, "a complete page has no cursor")
            break
        _check(isinstance(page.cursor, str) and page.cursor, "an incomplete page has a cursor")
        cursor = page.cursor
    _check(names == [f"{prefix}item:{i}" for i in range(4)], f"paged names: {names}")
    _check(pages == 2, f"4 keys at limit 3 make 2 pages, got {pages}")

    page = await kv.list(prefix=prefix, limit=1000)
    by_name = {key.name: key for key in page.keys}
    _check(len(page.keys) == 6 and page.list_complete, f"list all: {[k.name for k in page.keys]}")
    exp = by_name[kept].expiration
    _check(isinstance(exp, int) and before + 3500 <= exp <= before + 3700, f"expiration {exp}")
    _check(by_name[kept].metadata == meta, f"list metadata {by_name[kept].metadata!r}")

    for i in range(4):
        await kv.delete(f"{prefix}item:{i}")
    await kv.delete(prefix + "plain")
    await kv.delete(prefix + "missing")  # deleting a missing key is not an error
    _check(await kv.get_json(prefix + "plain") is None, "deleted key is gone")
    left = await kv.list(prefix=prefix)
    _check([k.name for k in left.keys] == [kept], f"after delete: {[k.name for k in left.keys]}")
    return kept
