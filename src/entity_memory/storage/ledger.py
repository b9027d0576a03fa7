"""The D1 ledger: every version of every entity, metric observations, processed sessions,
and sessions whose LLM extraction is still owed (pending).

KV holds only the live state, last writer wins. The ledger is the audit trail (SPEC best
practices 2 and 7) and what trends and exports read. Writes for a whole batch go in one D1
`batch` (one round trip, one transaction). A batch upsert (service/batch_upsert.py) writes
the ledger after the entity documents and before the index, so the ledger never holds a
version that KV never received. What a batch records (service/version_rows.py) is decided
there; this module holds the SQL, and takes plain values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from entity_memory.domain.models import BaseEntity
from entity_memory.storage.d1 import D1Database, Statement
from entity_memory.storage.ledger_rows import PendingPart, PendingSession, ProcessedSession

ChangeKind = Literal["created", "updated", "contradicted", "deleted", "expired"]
RemovalKind = Literal["deleted", "expired"]
REMOVAL_KINDS: frozenset[str] = frozenset({"deleted", "expired"})

_INSERT_VERSION = (
    "INSERT INTO entity_versions (user_id, entity_type, entity_id, version, change_kind,"
    " entity_json, changed_fields, session_id, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_OBSERVATION = (
    "INSERT INTO metric_observations (user_id, metric_id, campaign, kpi, value, unit,"
    " observed_at, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_TOUCH_USER = (
    "INSERT INTO user_activity (user_id, last_write_at) VALUES (?, ?)"
    " ON CONFLICT(user_id) DO UPDATE SET last_write_at = excluded.last_write_at"
)
_DELETE_OBSERVATION = (
    "DELETE FROM metric_observations WHERE user_id = ? AND metric_id = ? AND session_id IS ?"
    " AND observed_at = ?"
)


def _parse_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": row["version"],
        "changeKind": row["change_kind"],
        "changes": json.loads(row["changed_fields"] or "{}"),
        "sessionId": row["session_id"],
        "recordedAt": row["recorded_at"],
        "entity": json.loads(row["entity_json"]) if row["entity_json"] else None,
    }


def _parse_pending(row: dict[str, Any]) -> PendingSession:
    return PendingSession.model_validate(
        {
            **row,
            "messages": json.loads(row["messages"]) if row.get("messages") else None,
            "ranges": [tuple(r) for r in json.loads(row["ranges"] or "[]")],
        }
    )


class Ledger:
    def __init__(self, db: D1Database) -> None:
        self.db = db

    # --- writes ----------------------------------------------------------------------------------

    def version_statement(
        self,
        entity: BaseEntity,
        kind: ChangeKind,
        entity_json: str,
        changes_json: str,
        now: int,
    ) -> Statement:
        """A version of an entity, as written (`entity_json`), with what changed."""
        values = (entity.user_id, entity.type, entity.id, entity.version, kind, entity_json)
        return (_INSERT_VERSION, (*values, changes_json, entity.session_id, now))

    def observation_statement(
        self,
        user_id: str,
        metric_id: str,
        campaign: str | None,
        kpi: str,
        value: float,
        unit: str | None,
        measured_at: int,
        session_id: str | None,
    ) -> Statement:
        """A value of a metric's series, at the time it was measured."""
        values = (campaign, kpi, value, unit, measured_at, session_id)
        return (_INSERT_OBSERVATION, (user_id, metric_id, *values))

    def observation_removal_statement(
        self, user_id: str, metric_id: str, session_id: str | None, measured_at: int
    ) -> Statement:
        """Drop the row of a value a later write of the same session and day replaced."""
        return (_DELETE_OBSERVATION, (user_id, metric_id, session_id, measured_at))

    def activity_statement(self, user_id: str, now: int) -> Statement:
        """The user wrote at `now` (the cron's reindex visits recent writers)."""
        return (_TOUCH_USER, (user_id, now))

    def removal_statement(
        self,
        user_id: str,
        entity_type: str,
        entity_id: str,
        last_version: int,
        kind: RemovalKind,
        now: int,
    ) -> Statement:
        """A deletion or expiry, as a version of its own after `last_version`.

        Its own number keeps (entity, version) naming one row, so a reader of the history or
        of `changes` can tell the removal from the write it follows.
        """
        return (
            _INSERT_VERSION,
            (user_id, entity_type, entity_id, last_version + 1, kind, None, "{}", None, now),
        )

    def session_statement(
        self, user_id: str, session_id: str, content_hash: str, now: int, counts: dict[str, int]
    ) -> Statement:
        """Mark a session's messages as processed (what re-sends are compared against)."""
        return (
            "INSERT INTO processed_sessions (user_id, session_id, content_hash, processed_at,"
            " counts) VALUES (?, ?, ?, ?, ?) ON CONFLICT(user_id, session_id) DO UPDATE SET"
            " content_hash = excluded.content_hash, processed_at = excluded.processed_at,"
            " counts = excluded.counts",
            (user_id, session_id, content_hash, now, json.dumps(counts)),
        )

    async def processed_session(self, user_id: str, session_id: str) -> ProcessedSession | None:
        """How far a session was read, and what of it is still pending, in one D1 read."""
        rows = await self.db.all(
            "SELECT p.content_hash, p.processed_at, p.counts, q.ranges AS pending_ranges,"
            " q.content_hash AS pending_hash, q.attempts AS pending_attempts,"
            " q.extractor AS pending_extractor"
            " FROM processed_sessions p LEFT JOIN pending_sessions q"
            " ON q.user_id = p.user_id AND q.session_id = p.session_id"
            " WHERE p.user_id = ? AND p.session_id = ?",
            (user_id, session_id),
        )
        if not rows:
            return None
        row = rows[0]
        pending = None
        if row.get("pending_ranges") is not None:
            pending = PendingPart(
                ranges=[tuple(r) for r in json.loads(row["pending_ranges"])],
                content_hash=row["pending_hash"],
                attempts=int(row["pending_attempts"] or 0),
                extractor=row["pending_extractor"],
            )
        return ProcessedSession(
            content_hash=row["content_hash"],
            processed_at=row["processed_at"],
            counts=json.loads(row["counts"] or "{}"),
            pending=pending,
        )

    # --- pending sessions ------------------------------------------------------------------

    def pending_statement(
        self,
        user_id: str,
        session_id: str,
        extractor: str,
        content_hash: str,
        messages_json: str | None,
        ranges: Sequence[tuple[int, int]],
        reason: str,
        now: int,
        next_attempt_at: int,
    ) -> Statement:
        """Record (or update) the messages of a session an LLM still owes; attempts count up."""
        return (
            "INSERT INTO pending_sessions (user_id, session_id, extractor, content_hash,"
            " messages, ranges, reason, attempts, next_attempt_at, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?) ON CONFLICT(user_id, session_id) DO UPDATE"
            " SET extractor = excluded.extractor, content_hash = excluded.content_hash,"
            " messages = excluded.messages, ranges = excluded.ranges, reason = excluded.reason,"
            " attempts = pending_sessions.attempts + 1,"
            " next_attempt_at = excluded.next_attempt_at, updated_at = excluded.updated_at",
            (
                user_id,
                session_id,
                extractor,
                content_hash,
                messages_json,
                json.dumps([list(r) for r in ranges]),
                reason[:2000],
                next_attempt_at,
                now,
                now,
            ),
        )

    def clear_pending_statement(self, user_id: str, session_id: str) -> Statement:
        return (
            "DELETE FROM pending_sessions WHERE user_id = ? AND session_id = ?",
            (user_id, session_id),
        )

    async def pending_session(self, user_id: str, session_id: str) -> PendingSession | None:
        rows = await self.db.all(
            "SELECT * FROM pending_sessions WHERE user_id = ? AND session_id = ?",
            (user_id, session_id),
        )
        return _parse_pending(rows[0]) if rows else None

    async def due_pending(self, now: int, limit: int) -> list[PendingSession]:
        """Pending sessions whose next attempt is due, the longest-waiting first."""
        rows = await self.db.all(
            "SELECT * FROM pending_sessions WHERE next_attempt_at <= ?"
            " ORDER BY next_attempt_at LIMIT ?",
            (now, limit),
        )
        return [_parse_pending(r) for r in rows]

    async def write(self, statements: Sequence[Statement]) -> None:
        if statements:
            await self.db.batch(statements)

    # --- reads ---------------------------------------------------------------------------------

    async def latest(
        self, user_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[int, str]]:
        """(version, change kind) of the newest ledger row of each (type, id) that has one."""
        rows = await self._newest_rows(user_id, keys, "version, change_kind")
        return {key: (int(row["version"]), row["change_kind"]) for key, row in rows.items()}

    async def history(
        self, user_id: str, entity_type: str, entity_id: str, limit: int = 100
    ) -> list[dict[str, Any]]:
        rows = await self.db.all(
            "SELECT * FROM entity_versions WHERE user_id = ? AND entity_type = ? AND entity_id = ?"
            " ORDER BY seq DESC LIMIT ?",
            (user_id, entity_type, entity_id, limit),
        )
        return [_parse_row(r) for r in rows]

    async def changes_since(
        self, user_id: str, since_ms: int, limit: int = 500
    ) -> list[dict[str, Any]]:
        """Changes after `since_ms`, grouped by entity, entities by their latest change.

        `status` is the entity's state after its last change here: `live` (with `current`,
        the entity as that change left it), or `deleted` / `expired` (no `current`: a removed
        entity must not read as live).
        """
        rows = await self.db.all(
            "SELECT * FROM entity_versions WHERE user_id = ? AND recorded_at > ?"
            " ORDER BY seq ASC LIMIT ?",
            (user_id, since_ms, limit),
        )
        grouped: dict[tuple[str, str], dict[str, Any]] = {}
        for row in rows:
            key = (row["entity_type"], row["entity_id"])
            group = grouped.setdefault(
                key, {"type": key[0], "id": key[1], "name": None, "changes": []}
            )
            parsed = _parse_row(row)
            entity = parsed.pop("entity")
            if entity is not None:
                group["name"] = entity["name"]
                group["current"] = entity
            group["changes"].append(parsed)
            if parsed["changeKind"] in REMOVAL_KINDS:
                group.pop("current", None)
                group["status"] = parsed["changeKind"]
            else:
                group["status"] = "live"
        unnamed = [key for key, group in grouped.items() if group["name"] is None]
        for key, name in (await self._last_names(user_id, unnamed)).items():
            grouped[key]["name"] = name
        return sorted(grouped.values(), key=lambda g: -g["changes"][-1]["recordedAt"])

    async def _last_names(
        self, user_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], str]:
        """The name each entity had in its newest recorded version (a removal row has none)."""
        rows = await self._newest_rows(user_id, keys, "entity_json", "AND entity_json IS NOT NULL")
        return {key: json.loads(row["entity_json"])["name"] for key, row in rows.items()}

    async def _newest_rows(
        self, user_id: str, keys: Sequence[tuple[str, str]], columns: str, where: str = ""
    ) -> dict[tuple[str, str], dict[str, Any]]:
        """The newest ledger row (matching `where`) of each (type, id), with `columns`.

        D1 binds at most 100 parameters a statement, so ids go in chunks.
        """
        wanted = set(keys)
        ids = sorted({entity_id for _, entity_id in wanted})
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for start in range(0, len(ids), 90):
            chunk = ids[start : start + 90]
            marks = ", ".join("?" * len(chunk))
            rows = await self.db.all(
                f"SELECT entity_type, entity_id, {columns} FROM entity_versions WHERE seq IN"
                f" (SELECT MAX(seq) FROM entity_versions WHERE user_id = ? {where}"
                f" AND entity_id IN ({marks}) GROUP BY entity_type, entity_id)",
                (user_id, *chunk),
            )
            for row in rows:
                key = (row["entity_type"], row["entity_id"])
                if key in wanted:
                    found[key] = row
        return found

    async def metric_observations(self, user_id: str) -> list[dict[str, Any]]:
        return await self.db.all(
            "SELECT metric_id, campaign, kpi, value, unit, observed_at, session_id"
            " FROM metric_observations WHERE user_id = ? ORDER BY metric_id, observed_at, seq",
            (user_id,),
        )

    async def versions_of_type(self, user_id: str, entity_type: str) -> list[dict[str, Any]]:
        return await self.db.all(
            "SELECT entity_id, version, change_kind, entity_json, recorded_at FROM entity_versions"
            " WHERE user_id = ? AND entity_type = ? ORDER BY seq",
            (user_id, entity_type),
        )

    async def all_versions(self, user_id: str) -> list[dict[str, Any]]:
        rows = await self.db.all(
            "SELECT * FROM entity_versions WHERE user_id = ? ORDER BY seq", (user_id,)
        )
        return [{"type": r["entity_type"], "id": r["entity_id"], **_parse_row(r)} for r in rows]

    async def recent_users(self, since_ms: int, limit: int = 50) -> list[str]:
        rows = await self.db.all(
            "SELECT user_id FROM user_activity WHERE last_write_at >= ?"
            " ORDER BY last_write_at DESC LIMIT ?",
            (since_ms, limit),
        )
        return [r["user_id"] for r in rows]

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every row of the user; counts per table."""
        tables = (
            "entity_versions",
            "metric_observations",
            "processed_sessions",
            "pending_sessions",
            "session_rejections",
            "user_activity",
        )
        counts = await self.db.batch(
            [(f"SELECT COUNT(*) AS n FROM {t} WHERE user_id = ?", (user_id,)) for t in tables]
            + [(f"DELETE FROM {t} WHERE user_id = ?", (user_id,)) for t in tables]
        )
        return {t: int(counts[i][0]["n"]) for i, t in enumerate(tables)}
