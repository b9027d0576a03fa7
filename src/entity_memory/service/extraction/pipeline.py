"""The extraction stages in order (see __init__.py): plan, extract, check, resolve, ledger,
upsert.

An LLM failure is never hidden behind the rules: the ranges that succeeded are stored, the
messages that failed are recorded as pending in the ledger, and the response says
`degraded: true` with `degradedReason`. Pending messages are retried by the scheduled handler
(retry_pending.py) and by the next send of the same session.
"""

from __future__ import annotations

from dataclasses import dataclass

from entity_memory.extraction.base import Message
from entity_memory.extraction.registry import LLM_EXTRACTORS, ExtractorFactory
from entity_memory.extraction.registry import build_extractor as default_factory
from entity_memory.service.bindings import Bindings
from entity_memory.service.extraction import check as check_stage
from entity_memory.service.extraction import extract as extract_stage
from entity_memory.service.extraction import plan as plan_stage
from entity_memory.service.extraction.carry import carry_readings, refresh_snapshots
from entity_memory.service.extraction.outcome import ExtractionOutcome
from entity_memory.service.extraction.ports import SessionLedger, SessionStore
from entity_memory.service.extraction.resolve_candidates import resolve
from entity_memory.service.extraction.session_cursor import ledger_rows
from entity_memory.service.extraction.stage_data import Extracted, LedgerRows, Plan, SessionRequest
from entity_memory.service.extraction.upsert import upsert


def degraded_reason(extracted: Extracted, rows: LedgerRows, has_ledger: bool) -> str | None:
    if not rows.owed:
        return None
    later = (
        "now pending a retry"
        if has_ledger
        else "no ledger to keep them pending: send the session again to retry"
    )
    return (
        f"{extracted.extractor} failed on {rows.counts['pendingMessages']} message(s), {later}:"
        f" {extracted.failures[0].reason}"
    )


def still_pending(plan: Plan, rows: LedgerRows) -> bool:
    """Whether the session owes an LLM messages after this run: what failed now, or what an
    LLM owed before and the rules did not retry (they never take over an LLM's range)."""
    return bool(rows.owed) or (plan.prior is not None and not plan.is_llm)


def admit(
    bindings: Bindings,
    factory: ExtractorFactory,
    user_id: str,
    session_id: str,
    messages: list[Message],
    extractor: str | None,
) -> str:
    """What `SessionExtraction.run` would refuse before reading anything, refused now (a job
    is accepted only if it can run); the extractor that will run it."""
    request = SessionRequest(
        user_id=user_id, session_id=session_id, messages=messages, requested=extractor
    )
    plan_stage.validate_request(request)
    name = extract_stage.choose_extractor(request.requested, bindings)
    extract_stage.build_extractor(factory, name, bindings, extractor is not None)
    return name


@dataclass
class SessionExtraction:
    store: SessionStore
    ledger: SessionLedger | None
    bindings: Bindings
    factory: ExtractorFactory = default_factory

    async def run(
        self,
        user_id: str,
        session_id: str,
        messages: list[Message],
        extractor: str | None,
        session_now: int | None = None,
    ) -> ExtractionOutcome:
        """Extract what is new in the session (and what is pending of it)."""
        request = SessionRequest(
            user_id=user_id,
            session_id=session_id,
            messages=messages,
            requested=extractor,
            session_now=session_now,
        )
        return await self.run_request(request)

    async def run_request(self, request: SessionRequest) -> ExtractionOutcome:
        plan_stage.validate_request(request)
        name = extract_stage.choose_extractor(request.requested, self.bindings)
        cursor = await plan_stage.read_cursor(self.ledger, request)
        plan = plan_stage.plan(request.messages, cursor, name, name in LLM_EXTRACTORS)
        if plan.nothing_new:
            return ExtractionOutcome.already_processed(pending=plan.prior is not None)
        built = extract_stage.build_extractor(
            self.factory, name, self.bindings, request.requested is not None
        )
        now = self.store.clock()
        text = "\n".join(m.content for s, e in plan.ranges for m in request.messages[s:e])
        known = await extract_stage.known_entities(
            self.store, request.user_id, text, now, plan.is_llm
        )
        extracted = await extract_stage.extract(
            built, request.messages, plan, known.entities, request.session_now or now
        )
        checked = await check_stage.check(extracted, request.messages, known.entities)
        items = await resolve(
            checked.inputs,
            known.index,
            self.store.embedder,
            name,
            known.entities if plan.is_llm else (),
            extracted.shown,
        )
        items = await carry_readings(
            self.store, request.user_id, request.session_id, items, known.index
        )
        items = await refresh_snapshots(self.store, request.user_id, items, known.index)
        rows = ledger_rows(
            self.ledger, request.user_id, request.session_id, request.messages, plan,
            extracted, checked, now,
        )  # fmt: skip
        upserted = await upsert(
            self.store, self.ledger, request.user_id, request.session_id, items, known.index, rows
        )
        return ExtractionOutcome(
            processed=not rows.owed,
            extractor=name,
            entities=[r.entity_json() for r in upserted],
            results=[r.to_json_dict() for r in upserted],
            rejected=checked.rejected,
            dropped=checked.dropped,
            counts=rows.counts,
            usage=extracted.usage,
            pending=still_pending(plan, rows) and self.ledger is not None,
            degraded_reason=degraded_reason(extracted, rows, self.ledger is not None),
        )
