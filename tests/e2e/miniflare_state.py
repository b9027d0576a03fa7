"""Read the host's Miniflare state (KV and D1) directly from its SQLite files.

Spawning `npx wrangler kv key get` per key cost ~1-3 s a call; the files are the same data,
read in microseconds. Reads only: writes still go through the host or `Host.wrangler`, so
Miniflare's own invariants (blob ids, expirations) are never bypassed.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

KV_NAMESPACE = "00000000000000000000000000000000"  # wrangler.toml's ENTITIES id


def _object_db(persist_dir: Path, kind: str, object_class: str) -> Path:
    """The one Durable Object SQLite file Miniflare keeps for a binding's storage."""
    found = [
        p
        for p in (persist_dir / kind / object_class).glob("*.sqlite")
        if p.name != "metadata.sqlite"
    ]
    if len(found) != 1:
        raise FileNotFoundError(f"expected one {kind} database under {persist_dir}, got {found}")
    return found[0]


def _query(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    for attempt in range(10):
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)) as conn:
                conn.row_factory = sqlite3.Row
                return [dict(row) for row in conn.execute(sql, params)]
        except sqlite3.OperationalError as exc:  # a write in flight on the host
            if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == 9:
                raise
            time.sleep(0.1 * (attempt + 1))
    raise AssertionError("unreachable")


def _live(expiration: int | None) -> bool:
    return expiration is None or expiration > time.time() * 1000


def kv_list(persist_dir: Path, prefix: str) -> list[dict[str, Any]]:
    """Live keys under `prefix`, sorted, as `wrangler kv key list` prints them."""
    db = _object_db(persist_dir, "kv", "miniflare-KVNamespaceObject")
    rows = _query(
        db,
        "SELECT key, expiration, metadata FROM _mf_entries WHERE substr(key, 1, ?) = ?"
        " ORDER BY key",
        (len(prefix), prefix),
    )
    out = []
    for row in rows:
        if not _live(row["expiration"]):
            continue
        item: dict[str, Any] = {"name": row["key"]}
        if row["expiration"] is not None:
            item["expiration"] = row["expiration"] // 1000
        if row["metadata"] is not None:
            item["metadata"] = json.loads(row["metadata"])
        out.append(item)
    return out


#: Reads of a key that the host rewrote between finding its blob and opening it.
KV_READ_ATTEMPTS = 5


def kv_get(persist_dir: Path, key: str) -> str | None:
    """A key's value as text, or None when it is absent or expired.

    A write replaces the key's blob and deletes the old file, so a read that found the old
    blob id may find its file gone: the entry is then looked up again."""
    db = _object_db(persist_dir, "kv", "miniflare-KVNamespaceObject")
    for attempt in range(KV_READ_ATTEMPTS):
        rows = _query(db, "SELECT blob_id, expiration FROM _mf_entries WHERE key = ?", (key,))
        if not rows or not _live(rows[0]["expiration"]):
            return None
        try:
            return (persist_dir / "kv" / KV_NAMESPACE / "blobs" / rows[0]["blob_id"]).read_text()
        except FileNotFoundError:
            if attempt == KV_READ_ATTEMPTS - 1:
                raise
    return None


def d1(persist_dir: Path, sql: str) -> list[dict[str, Any]]:
    """Rows of one read-only statement against the local D1 database (HISTORY)."""
    return _query(_object_db(persist_dir, "d1", "miniflare-D1DatabaseObject"), sql)
