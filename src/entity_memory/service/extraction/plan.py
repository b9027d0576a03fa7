"""Stage 1, plan: what of this session is new.

Sessions are idempotent: the ledger remembers how many messages of a session were read and
their hash, so a re-send costs one D1 read and plans nothing, and a session that grew plans
only its new messages. Messages an LLM still owes (pending) are planned again, but only for an
LLM: the rules never retry an LLM's pending range (their names would not match what the LLM
later finds).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from entity_memory.domain.keys import validate_id
from entity_memory.domain.limits import MAX_MESSAGES
from entity_memory.extraction.base import Message
from entity_memory.service.extraction.ports import SessionLedger
from entity_memory.service.extraction.request_errors import ExtractionRequestError
from entity_memory.service.extraction.stage_data import Plan, Range, SessionCursor, SessionRequest


def messages_hash(messages: Sequence[Message]) -> str:
    doc = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
    return hashlib.sha256(doc.encode()).hexdigest()


def validate_request(request: SessionRequest) -> None:
    validate_id(request.user_id, "user")
    validate_id(request.session_id, "session")
    if not any(m.content.strip() for m in request.messages):
        raise ExtractionRequestError("empty_conversation", "the conversation is empty")
    if len(request.messages) > MAX_MESSAGES:
        raise ExtractionRequestError("too_large", f"at most {MAX_MESSAGES} messages")


async def read_cursor(
    ledger: SessionLedger | None, request: SessionRequest
) -> SessionCursor | None:
    if ledger is None:
        return None
    row = await ledger.processed_session(request.user_id, request.session_id)
    return SessionCursor.from_row(row)


def plan(
    messages: Sequence[Message], cursor: SessionCursor | None, extractor: str, is_llm: bool
) -> Plan:
    """The ranges to extract: pending ranges within the read prefix (LLM only), then the
    messages after the prefix. A cursor whose prefix hash no longer matches counts for
    nothing (the session was edited, so it is read again)."""
    done, prior = 0, None
    if cursor is not None:
        read = cursor.messages_read
        if 0 < read <= len(messages) and messages_hash(messages[:read]) == cursor.content_hash:
            done, prior = read, cursor.pending
    ranges: list[Range] = []
    if prior is not None and is_llm:
        ranges += [(s, e) for s, e in prior.ranges if e <= done]
    if done < len(messages):
        ranges.append((done, len(messages)))
    return Plan(
        extractor=extractor,
        is_llm=is_llm,
        done=done,
        ranges=ranges,
        prior=prior,
        had_pending=bool(cursor and cursor.pending),
    )


def merge_ranges(ranges: Sequence[Range]) -> list[Range]:
    merged: list[Range] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
