"""The user's writer as its Durable Object runs it: one typed call in, one reply out.

The object (entry.py, `UserWriter`) exposes one RPC method, `serve(name, call_json)`, for
the operations of `service.writes.OPERATIONS`; `WriterHost.serve` validates the JSON into
the operation's call model, runs its service function alone
(`WriterState.run`: one at a time, then waits for the index flush) against the writer's own
copy of the user's KV, and answers a `Reply`: the done model's JSON or a `Refusal`, with what
the call cost. Nothing here re-parses a URL or re-serves the public API: the Worker has
already authenticated the caller and routed the request; the object is reachable only by RPC.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from entity_memory.domain.index_entries import embedding_text
from entity_memory.domain.models import BaseEntity
from entity_memory.extraction.base import Usage
from entity_memory.extraction.registry import ExtractorFactory, build_extractor
from entity_memory.service import writes
from entity_memory.service.bindings import Bindings
from entity_memory.service.extraction.pipeline import ExtractionOutcome
from entity_memory.service.jobs import Job, JobBook, JobError, JsonDoc, chunk_ends
from entity_memory.service.stores import build_ledger
from entity_memory.service.user_writer import WriterState
from entity_memory.service.vector_backlog import (
    BACKLOG_BATCH,
    BACKLOG_RETRY_MS,
    BACKLOG_STEPS_PER_ALARM,
    VECTORS_FLUSH_WITHIN_MS,
    VectorBacklog,
    apply_vectors,
    to_embed,
)
from entity_memory.service.writers import Refusal, Reply, WriterCosts
from entity_memory.service.writes import OPERATIONS, Call, ExtractCall, Operation, WriteContext
from entity_memory.settings import WriteAck
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.guard import guarded
from entity_memory.storage.kv import CountingKV

logger = logging.getLogger(__name__)

C = TypeVar("C", bound=Call)
D = TypeVar("D", bound=BaseModel)

#: Turns an exception a call raised into the refusal the API answers (http/errors.py's
#: table, handed in by the adapter: the service does not know HTTP codes).
Describe = Callable[[Exception], Refusal]


#: Asks the platform to call `run_jobs` soon (the object sets its alarm for now).
Wake = Callable[[], Awaitable[None]]


class WriterHost:
    def __init__(
        self,
        state: WriterState,
        bind: Callable[[], Bindings],
        describe: Describe,
        factory: ExtractorFactory = build_extractor,
        wake: Wake | None = None,
    ) -> None:
        self.state, self.bind, self.describe, self.factory = state, bind, describe, factory
        self.jobs = JobBook(state.table)
        self.backlog = VectorBacklog(state.table)
        self._wake = wake
        self._running_jobs = False
        self._embedding: asyncio.Future[None] | None = None

    async def wake(self) -> None:
        if not self._running_jobs and self._wake is not None:
            await self._wake()

    def _context(self, call: Call) -> tuple[WriteContext, CountingKV, CountingD1 | None]:
        base = self.bind()
        kv = CountingKV(guarded(base.kv, "KV"))
        db = None if base.db is None else CountingD1(guarded(base.db, "D1"))
        held = self.state.kv(kv)
        clock = base.clock if call.now is None else _fixed(call.now)
        b = replace(base, kv=held, db=db, clock=clock, held_index=held, replica=kv)
        ctx = WriteContext(
            build_ledger(b), b, self.factory, self.state, self.jobs, self.wake, self.backlog
        )
        return ctx, kv, db

    async def serve(self, name: str, call_json: str) -> str:
        """Run the operation `name` on the call in `call_json` (the object's RPC method);
        the reply's JSON: the done model's, or the refusal, with what the call cost."""
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
        counted: list[WriterCosts] = []
        try:
            # Counted before the index flush: the flush is the writer's, shared by the
            # writes it coalesces (reported as index_writes).
            done = await self.execute(
                operation, call, ctx, ran=lambda: counted.append(self._costs(kv, db))
            )
        except Exception as exc:
            return Reply(refusal=self.describe(exc), costs=self._costs(kv, db)).model_dump_json()
        costs = counted[0]
        costs.index_writes = self.state.index_writes
        return Reply[operation.done](result=done, costs=costs).model_dump_json(by_alias=True)

    async def execute(
        self,
        operation: Operation[C, D],
        call: C,
        ctx: WriteContext | None = None,
        *,
        acknowledge: bool = True,
        ran: Callable[[], object] | None = None,
    ) -> D:
        """Run `operation` on `call` in this writer: alone if it is serialised (then wait for
        KV's index to hold the change, unless `acknowledge` is False: `WriterState.run`).
        `ran` is called once the operation is done, before that wait."""
        if ctx is None:
            ctx = self._context(call)[0]
        context = ctx

        async def op() -> D:
            # Checked once the call has the writer (a forget may have run while it waited).
            self.state.refuse_erased_token(call.token_id)
            done = await operation.run(context, call)
            if ran is not None:
                ran()
            return done

        if operation.serialised:
            committed = (
                context.bindings.settings.write_ack == WriteAck.COMMITTED
                and not operation.indexed_answer
            )
            return await self.state.run(op, acknowledge=acknowledge, committed=committed)
        return await op()

    async def alarm(self) -> None:
        """The object's alarm: heal an index flush that failed or was left for later, embed
        what writes left, then run the queued jobs."""
        self.state.kv(guarded(self.bind().kv, "KV"))  # where a flush writes, on a new instance
        await self.state.retry_flush()
        await self.embed_backlog()
        await self.run_jobs()

    async def embed_backlog(self) -> None:
        """Give the entries the backlog lists the vectors of their current texts
        (service/vector_backlog.py), a batch of texts at a time. The entities are read and
        the vectors applied inside the writer's lock; the model call runs outside it, so the
        user's writes never wait on the model. A pass that fails leaves the backlog for a
        later alarm. A call that finds a pass under way waits for it: a job's chunk must find
        the vectors of what was written before it (resolution by meaning reads them)."""
        if self._embedding is not None:
            await asyncio.shield(self._embedding)
            return
        self._embedding = asyncio.get_running_loop().create_future()
        try:
            for _ in range(BACKLOG_STEPS_PER_ALARM):
                if not await self._embed_some():
                    return
            # A bulk upload's backlog goes on in the next alarm: one alarm's CPU time is
            # bounded (each step rewrites the index), the platform's limit is per invocation.
            await self.state.retry_at(self.state.clock())
        except Exception:
            logger.exception("embedding the backlog failed; a later alarm tries again")
            await self.state.retry_at(self.state.clock() + BACKLOG_RETRY_MS)
        finally:
            passing, self._embedding = self._embedding, None
            passing.set_result(None)

    async def _embed_some(self) -> bool:
        """Embed the texts of the backlog's first refs; whether to go on (False: nothing
        left, embeddings are off, or the model failed and a later alarm tries again)."""
        backlog = self.backlog.get()
        if backlog is None or not backlog.refs:
            return False
        ctx, _, _ = self._context(Call(user_id=backlog.user_id))
        store, embedder = ctx.store, ctx.store.embedder
        if embedder is None:  # turned off since the writes: their entries rank by words

            async def drop() -> None:
                self.backlog.settle(backlog.refs)

            await self.state.alone(drop)
            return False
        refs = backlog.refs[:BACKLOG_BATCH]

        async def read() -> list[BaseEntity]:
            todo, done = await to_embed(store, embedder, backlog.user_id, refs)
            self.backlog.settle(done)
            return todo

        todo = await self.state.alone(read)
        if not todo:
            return True
        vectors = await embedder.try_embed([embedding_text(e) for e in todo], "passage")
        if vectors is None:
            await self.state.retry_at(self.state.clock() + BACKLOG_RETRY_MS)
            return False

        async def apply() -> None:
            made = list(zip(todo, vectors, strict=True))
            # A ref whose text changed meanwhile stays: its new text is embedded next.
            self.backlog.settle(await apply_vectors(store, embedder, backlog.user_id, made))

        await self.state.alone(apply)
        await self.state.publish_within(VECTORS_FLUSH_WITHIN_MS)
        return True

    async def run_jobs(self) -> None:
        """Run the queued extraction jobs, oldest first, one at a time (the object's alarm).
        Each chunk is an `extract` call run like any write (directly, under the writer's
        lock), so the user's other writes take turns with it in the writer."""
        if self._running_jobs:
            return
        self._running_jobs = True
        try:
            ran = False
            while (job := self.jobs.next_runnable()) is not None:
                await self._run_job(job)
                ran = True
            if ran:
                await self.embed_backlog()  # what writes left during the last chunk
        finally:
            self._running_jobs = False

    async def _run_job(self, job: Job) -> None:
        messages = self.jobs.conversation(job.id)
        total = _Outcomes()
        job.state, job.updated_at = "running", self._now()
        self.jobs.save(job)
        for end in chunk_ends(messages)[job.chunks_done :]:
            await self.embed_backlog()  # writes between chunks wake no alarm of their own
            call = ExtractCall(
                user_id=job.user_id,
                session_id=job.session_id,
                messages=messages[:end],
                extractor=job.extractor,
                now=job.now,
                session_now=job.session_now,
                job_id=job.id,
            )
            # Run here, in the writer, as any write; not acknowledged: nobody waits on a
            # chunk, and the job waits for KV once, below.
            try:
                outcome = await self.execute(writes.extract, call, acknowledge=False)
            except Exception as exc:
                if self.jobs.get(job.id) is None:  # the user was erased: the chunk did nothing
                    return
                r = self.describe(exc)
                job.error = JobError(status=r.status, code=r.code, message=r.message)
                self._finish(job, "failed")
                return
            if self.jobs.get(job.id) is None:  # the user was erased meanwhile
                return
            total.add(outcome)
            job.chunks_done, job.updated_at = job.chunks_done + 1, self._now()
            self.jobs.save(job)
            await asyncio.sleep(0)  # other requests' turn between chunks
        try:  # `done` means readers find it: KV's index holds every chunk's entities
            await self.state.settled()
        except Exception as exc:
            r = self.describe(exc)
            job.error = JobError(status=r.status, code=r.code, message=r.message)
            self._finish(job, "failed")
            return
        if self.jobs.get(job.id) is None:  # erased while the index was flushed
            return
        job.result, job.pending = total.result(), total.pending
        self._finish(job, "done")

    def _finish(self, job: Job, state: str) -> None:
        job.state, job.updated_at = state, self._now()  # type: ignore[assignment]
        self.jobs.finish(job)

    def _now(self) -> int:
        return self.state.clock()

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


class _Outcomes:
    """The chunks' outcomes as one: the body an inline extraction of the whole session
    would have answered (an entity written by two chunks appears once, as last written)."""

    def __init__(self) -> None:
        self.parts: list[ExtractionOutcome] = []

    def add(self, outcome: ExtractionOutcome) -> None:
        self.parts.append(outcome)

    @property
    def pending(self) -> bool:
        return any(p.pending for p in self.parts)

    def result(self) -> JsonDoc:
        ran = [p for p in self.parts if p.extractor is not None]
        if not ran:  # every chunk had been extracted before (a re-sent session)
            return self.parts[-1].to_json_dict()
        entities: dict[tuple[object, object], JsonDoc] = {}
        results: dict[tuple[object, object], JsonDoc] = {}
        for part in ran:
            for entity, result in zip(part.entities, part.results, strict=False):
                key = (entity.get("type"), entity.get("id"))
                entities.pop(key, None)
                results.pop(key, None)
                entities[key], results[key] = entity, result
        counts: dict[str, int] = {}
        usage = Usage()
        for part in ran:
            for name, n in (part.counts or {}).items():
                counts[name] = counts.get(name, 0) + n
            if part.usage is not None:
                usage.add(part.usage)
        merged = ExtractionOutcome(
            processed=all(p.processed for p in ran),
            extractor=ran[-1].extractor,
            entities=list(entities.values()),
            results=list(results.values()),
            rejected=[r for p in ran for r in p.rejected],
            counts=counts,
            usage=usage,
            pending=self.pending,
            degraded_reason=next((p.degraded_reason for p in ran if p.degraded_reason), None),
        )
        return merged.to_json_dict()
