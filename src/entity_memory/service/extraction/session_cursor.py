"""Stage 5, ledger: the session's read cursor and its pending row, as statements written with
the upsert (one D1 batch).

`processed_sessions` is the read cursor (how many messages were read, their hash) and
`pending_sessions` the message ranges still owed; a session is processed when it has no
pending row. Keeping the cursor lets a grown session send only its new messages while the
owed ones wait for their retry, on a doubling schedule.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from entity_memory.extraction.base import Message
from entity_memory.service.extraction.plan import merge_ranges, messages_hash
from entity_memory.service.extraction.ports import SessionLedger
from entity_memory.service.extraction.stage_data import Checked, Extracted, LedgerRows, Plan
from entity_memory.storage.d1 import Statement
from entity_memory.storage.session_log import rejection_statements

#: Retry schedule of a pending session: first wait, doubling, at most this.
PENDING_FIRST_RETRY_MS = 5 * 60 * 1000
PENDING_MAX_RETRY_MS = 6 * 60 * 60 * 1000
#: D1 caps a row at 2 MB; a larger conversation is kept pending without its messages (then
#: only a re-send of the session can retry it).
MAX_PENDING_MESSAGES_BYTES = 1_800_000


def retry_wait_ms(attempts: int) -> int:
    return min(PENDING_MAX_RETRY_MS, PENDING_FIRST_RETRY_MS * 2**attempts)


def counts(
    messages: Sequence[Message], plan: Plan, extracted: Extracted, checked: Checked
) -> dict[str, int]:
    owed = merge_ranges([(f.start, f.end) for f in extracted.failures])
    return {
        "messages": len(messages),
        "newMessages": len(messages) - plan.done,
        "candidates": len(extracted.candidates),
        "rejected": len(checked.rejected),
        "droppedFields": len(checked.dropped),
        "pendingMessages": sum(e - s for s, e in owed),
        "modelCalls": extracted.calls,
        # Replies cut off at their output budget; their complete items were kept.
        "truncatedReplies": extracted.truncated,
    }


def ledger_rows(
    ledger: SessionLedger | None,
    user_id: str,
    session_id: str,
    messages: Sequence[Message],
    plan: Plan,
    extracted: Extracted,
    checked: Checked,
    now: int,
) -> LedgerRows:
    owed = merge_ranges([(f.start, f.end) for f in extracted.failures])
    tally = counts(messages, plan, extracted, checked)
    statements: list[Statement] = []
    if ledger is not None:
        content_hash = messages_hash(messages)
        statements.append(ledger.session_statement(user_id, session_id, content_hash, now, tally))
        if owed:
            attempts = plan.prior.attempts if plan.prior else 0
            doc = json.dumps([m.model_dump() for m in messages], ensure_ascii=False)
            stored = doc if len(doc.encode()) <= MAX_PENDING_MESSAGES_BYTES else None
            reason = extracted.failures[0].reason
            statements.append(
                ledger.pending_statement(
                    user_id,
                    session_id,
                    plan.extractor,
                    content_hash,
                    stored,
                    owed,
                    reason,
                    now,
                    now + retry_wait_ms(attempts),
                )
            )
        elif plan.had_pending and (plan.is_llm or plan.prior is None):
            statements.append(ledger.clear_pending_statement(user_id, session_id))
        statements += rejection_statements(
            user_id, session_id, plan.extractor, checked.rejected, now, replace=plan.done == 0
        )
    return LedgerRows(statements=statements, counts=tally, owed=owed)
