"""A user's sessions as the ledger saw them (what each wrote, what it refused and why), and the
admin's list of users: reads of D1 only, no writer involved."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from entity_memory.domain.keys import validate_id
from entity_memory.domain.limits import DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT
from entity_memory.domain.safe_json import MAX_SAFE_INTEGER
from entity_memory.http.deps import LedgerDep, UserId
from entity_memory.http.errors import ApiError
from entity_memory.http.schemas import SessionDetail, SessionList, UserList
from entity_memory.storage.session_log import SessionLog

router = APIRouter(tags=["ledger"])

Limit = Annotated[int, Query(ge=1, le=MAX_HISTORY_LIMIT)]


@router.get("/v1/users/{user_id}/sessions", response_model=SessionList)
async def list_sessions(
    user_id: UserId, ledger: LedgerDep, limit: Limit = DEFAULT_HISTORY_LIMIT
) -> dict[str, Any]:
    """Sessions extracted for this user, newest first, with their counts."""
    sessions = await SessionLog(ledger.db).sessions(user_id, limit)
    return {"sessions": [s.model_dump(by_alias=True) for s in sessions], "count": len(sessions)}


@router.get("/v1/users/{user_id}/sessions/{session_id}", response_model=SessionDetail)
async def session_detail(
    user_id: UserId, session_id: str, ledger: LedgerDep, limit: Limit = MAX_HISTORY_LIMIT
) -> dict[str, Any]:
    """What one session wrote (its versions) and what its extraction refused, with reasons."""
    validate_id(session_id, "session")
    log = SessionLog(ledger.db)
    summary = await log.session(user_id, session_id)
    written = await log.written(user_id, session_id, limit)
    rejected = await log.rejections(user_id, session_id)
    if summary is None and not written and not rejected:
        raise ApiError(404, "not_found", f"no session {session_id!r} for user {user_id!r}")
    return {
        "sessionId": session_id,
        "processedAt": summary.processed_at if summary else None,
        "counts": summary.counts if summary else {},
        "extracted": written,
        "rejected": [r.model_dump(by_alias=True) for r in rejected],
    }


@router.get("/v1/admin/users", response_model=UserList, response_model_exclude_none=True)
async def list_users(
    ledger: LedgerDep,
    limit: Limit = DEFAULT_HISTORY_LIMIT,
    before: Annotated[int | None, Query(ge=0, lt=MAX_SAFE_INTEGER)] = None,
) -> dict[str, Any]:
    """Users with any write (the ledger's activity table), most recently written first."""
    users = await SessionLog(ledger.db).users(limit + 1, before)
    more = len(users) > limit
    users = users[:limit]
    page: dict[str, Any] = {"users": users, "count": len(users)}
    if more:
        page["nextBefore"] = users[-1]["lastWriteAt"]
    return page
