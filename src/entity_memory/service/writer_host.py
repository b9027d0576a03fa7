"""The user's writer as its Durable Object runs it: one typed call in, one reply out.

The object (entry.py, `UserWriter`) exposes one RPC method per operation of
`service.writes.OPERATIONS`; each hands its call's JSON to `WriterHost.serve`, which
validates it into the call model, runs the operation's service function alone
(`WriterState.run`: one at a time, then waits for the index flush) against the writer's own
copy of the user's KV, and answers a `Reply`: the done model's JSON or a `Refusal`, with what
the call cost. Nothing here re-parses a URL or re-serves the public API: the Worker has
already authenticated the caller and routed the request; the object is reachable only by RPC.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from pydantic import BaseModel, ValidationError

from entity_memory.extraction.registry import ExtractorFactory, build_extractor
from entity_memory.service.bindings import Bindings
from entity_memory.service.stores import build_ledger, build_store
from entity_memory.service.user_writer import WriterState
from entity_memory.service.writes import (
    OPERATIONS,
    Call,
    Refusal,
    Reply,
    WriteContext,
    WriterCosts,
)
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.guard import guarded
from entity_memory.storage.kv import CountingKV

logger = logging.getLogger(__name__)

#: Turns an exception a call raised into the refusal the API answers (http/errors.py's
#: table, handed in by the adapter: the service does not know HTTP codes).
Describe = Callable[[Exception], Refusal]


class WriterHost:
    def __init__(
        self,
        state: WriterState,
        bind: Callable[[], Bindings],
        describe: Describe,
        factory: ExtractorFactory = build_extractor,
    ) -> None:
        self.state, self.bind, self.describe, self.factory = state, bind, describe, factory

    def _context(self, call: Call) -> tuple[WriteContext, CountingKV, CountingD1 | None]:
        base = self.bind()
        kv = CountingKV(guarded(base.kv, "KV"))
        db = None if base.db is None else CountingD1(guarded(base.db, "D1"))
        held = self.state.kv(kv)
        clock = base.clock if call.now is None else _fixed(call.now)
        b = replace(base, kv=held, db=db, clock=clock, held_index=held, replica=kv)
        ledger = build_ledger(b)
        return WriteContext(build_store(b, ledger), ledger, b, self.factory, self.state), kv, db

    async def serve(self, name: str, call_json: str) -> str:
        """Run the operation `name` on the call in `call_json`; the reply's JSON."""
        operation = OPERATIONS.get(name)
        if operation is None:
            refusal = Refusal(status=404, code="no_such_operation", message=name)
            return Reply(refusal=refusal).model_dump_json()
        try:
            call = operation.call.model_validate_json(call_json)
        except ValidationError as exc:
            refusal = Refusal(status=422, code="invalid_call", message=str(exc)[:500])
            return Reply(refusal=refusal).model_dump_json()
        ctx, kv, db = self._context(call)

        async def op() -> tuple[BaseModel, WriterCosts]:
            done = await operation.run(ctx, call)
            # Counted before the index flush: the flush is the writer's, shared by the
            # writes it coalesces (reported as index_writes).
            return done, self._costs(kv, db)

        try:
            done, costs = await self.state.run(op)
        except Exception as exc:
            return Reply(refusal=self.describe(exc), costs=self._costs(kv, db)).model_dump_json()
        costs.index_writes = self.state.index_writes
        result = done.model_dump(mode="json", by_alias=True)
        return Reply(result=result, costs=costs).model_dump_json()

    def _costs(self, kv: CountingKV, db: CountingD1 | None) -> WriterCosts:
        return WriterCosts(
            kv_ops=dict(kv.ops),
            d1_calls=0 if db is None else db.calls,
            d1_statements=0 if db is None else db.statements,
            index_writes=self.state.index_writes,
        )


def _fixed(now: int) -> Callable[[], int]:
    def clock() -> int:
        return now

    return clock
