"""Per-session records of the ledger: what an extraction refused and why (typed rows), the
sessions a user has, and the versions each of them wrote.

Rejections were only in the extract response; kept here (`session_rejections`), the inspector
can show a session's extracted and rejected candidates side by side long after the call. Their
statements go in the extraction's one D1 batch, with its cursor and its upsert.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from entity_memory.storage.d1 import D1Database, Statement

#: A candidate is stored as given up to this many characters (a model can send a novel).
MAX_ITEM_CHARS = 4000
MAX_REASON_CHARS = 500
#: Rows shown per session: more than one extraction ever refuses.
MAX_REJECTIONS_PER_SESSION = 500


class _Row(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class Rejection(_Row):
    """One candidate an extraction refused."""

    extractor: str
    entity_type: str | None = None
    name: str | None = None
    code: str | None = None
    reason: str
    item: Any = None
    recorded_at: int


class SessionSummary(_Row):
    session_id: str
    processed_at: int
    counts: dict[str, int] = Field(default_factory=dict)


def _text(value: Any, cap: int) -> str | None:
    return None if not isinstance(value, str) or not value else value[:cap]


def rejection_statements(
    user_id: str,
    session_id: str,
    extractor: str,
    rejected: Iterable[Mapping[str, Any]],
    now: int,
    *,
    replace: bool = False,
) -> list[Statement]:
    """INSERTs for an extraction's rejected candidates; `replace` first drops the session's
    earlier rows (a session read again from its first message)."""
    out: list[Statement] = []
    if replace:
        out.append(
            (
                "DELETE FROM session_rejections WHERE user_id = ? AND session_id = ?",
                (user_id, session_id),
            )
        )
    for entry in rejected:
        item = entry.get("item")
        fields = item if isinstance(item, Mapping) else {}
        doc = json.dumps(item, ensure_ascii=False, default=str)
        out.append(
            (
                "INSERT INTO session_rejections (user_id, session_id, extractor, entity_type,"
                " name, code, reason, item_json, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    user_id,
                    session_id,
                    extractor,
                    _text(fields.get("type"), 40),
                    _text(fields.get("name"), 200),
                    _text(entry.get("code"), 60),
                    _text(entry.get("reason"), MAX_REASON_CHARS) or "rejected",
                    doc if len(doc) <= MAX_ITEM_CHARS else json.dumps(doc[:MAX_ITEM_CHARS]),
                    now,
                ),
            )
        )
    return out


class SessionLog:
    """Reads of the per-session records."""

    def __init__(self, db: D1Database) -> None:
        self.db = db

    async def sessions(self, user_id: str, limit: int) -> list[SessionSummary]:
        rows = await self.db.all(
            "SELECT session_id, processed_at, counts FROM processed_sessions WHERE user_id = ?"
            " ORDER BY processed_at DESC LIMIT ?",
            (user_id, limit),
        )
        return [
            SessionSummary(
                session_id=r["session_id"],
                processed_at=int(r["processed_at"]),
                counts=json.loads(r["counts"] or "{}"),
            )
            for r in rows
        ]

    async def session(self, user_id: str, session_id: str) -> SessionSummary | None:
        rows = await self.db.all(
            "SELECT session_id, processed_at, counts FROM processed_sessions"
            " WHERE user_id = ? AND session_id = ?",
            (user_id, session_id),
        )
        if not rows:
            return None
        r = rows[0]
        return SessionSummary(
            session_id=r["session_id"],
            processed_at=int(r["processed_at"]),
            counts=json.loads(r["counts"] or "{}"),
        )

    async def rejections(self, user_id: str, session_id: str) -> list[Rejection]:
        rows = await self.db.all(
            "SELECT extractor, entity_type, name, code, reason, item_json, recorded_at"
            " FROM session_rejections WHERE user_id = ? AND session_id = ? ORDER BY seq LIMIT ?",
            (user_id, session_id, MAX_REJECTIONS_PER_SESSION),
        )
        return [
            Rejection(
                extractor=r["extractor"],
                entity_type=r["entity_type"],
                name=r["name"],
                code=r["code"],
                reason=r["reason"],
                item=json.loads(r["item_json"]),
                recorded_at=int(r["recorded_at"]),
            )
            for r in rows
        ]

    async def written(self, user_id: str, session_id: str, limit: int) -> list[dict[str, Any]]:
        """The versions the session wrote (newest first): what was extracted from it."""
        rows = await self.db.all(
            "SELECT entity_type, entity_id, version, change_kind, changed_fields, recorded_at,"
            " entity_json FROM entity_versions WHERE user_id = ? AND session_id = ?"
            " ORDER BY seq DESC LIMIT ?",
            (user_id, session_id, limit),
        )
        out = []
        for r in rows:
            entity = json.loads(r["entity_json"]) if r["entity_json"] else {}
            out.append(
                {
                    "type": r["entity_type"],
                    "id": r["entity_id"],
                    "name": entity.get("name") or r["entity_id"],
                    "version": r["version"],
                    "changeKind": r["change_kind"],
                    "changes": json.loads(r["changed_fields"] or "{}"),
                    "recordedAt": r["recorded_at"],
                }
            )
        return out

    async def users(self, limit: int, before: int | None = None) -> list[dict[str, Any]]:
        """Users with writes, most recent first (`user_activity`: one row per user)."""
        sql = "SELECT user_id, last_write_at FROM user_activity"
        params: list[Any] = []
        if before is not None:
            sql += " WHERE last_write_at < ?"
            params.append(before)
        rows = await self.db.all(sql + " ORDER BY last_write_at DESC LIMIT ?", (*params, limit))
        return [{"userId": r["user_id"], "lastWriteAt": r["last_write_at"]} for r in rows]
