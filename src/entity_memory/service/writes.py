"""Every write of a user's memory, as a typed call: the writer's interface.

Each write is declared once, here: its service function, decorated with its call and done
models (`@operation(UpsertCall, UpsertDone)`); the function's name is the operation's name
and the decorated function is the `Operation` a route hands to the user's `Writer` with a
call (`await writer.run(writes.upsert, call)`). Which operations write is decided here, by
which of these a route runs, not by a path pattern. The writer runs them:

- in production, in the user's Durable Object (`service/writers.py`'s `RemoteWriter` -> the
  object's one RPC method `serve(name, call_json)` -> `service/writer_host.py`): one at a
  time per user, against the object's own copy, the call and its answer crossing the
  boundary as the models' JSON, so what arrives is what was validated;
- without a writer binding (CPython tests, a deployment without Durable Objects), in the
  request itself (`InProcessWriter`), with nothing serialising writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from entity_memory.domain.keys import index_key, validate_id, validate_type
from entity_memory.domain.kinds import RegisteredInput
from entity_memory.extraction.base import Message
from entity_memory.extraction.registry import ExtractorFactory
from entity_memory.service import erasure, expiry
from entity_memory.service import reindex as reindexing
from entity_memory.service.auth import TokenStore
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.bindings import Bindings
from entity_memory.service.entity_merge import (
    ExpectedVersion,
    check_versions,
    merge_into,
    refuse_reserved,
)
from entity_memory.service.entity_removal import remove_entity
from entity_memory.service.extraction.outcome import ExtractionOutcome
from entity_memory.service.jobs import Job, JobBook, JobList, JobView, NoSuchJob, chunk_ends, job_id
from entity_memory.service.stores import build_store
from entity_memory.service.user_writer import WriterState
from entity_memory.service.vector_backlog import VectorBacklog
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

if TYPE_CHECKING:
    from entity_memory.service.extraction.pipeline import SessionExtraction

JsonDoc = dict[str, JsonValue]


class Call(BaseModel):
    """What every write names: whose memory, and (where the deployment allows pinning it)
    the time the Worker's request runs at."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_id: str
    #: Epoch ms pinned by `X-Entity-Memory-Now` (evaluations); None: the writer's clock.
    now: int | None = None
    #: The user token that authorised the call (None: the admin token, the open mode, or
    #: the service itself). The writer refuses it once an erasure has deleted the token.
    token_id: str | None = None


class EntityRefModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    id: str


class UpsertCall(Call):
    session_id: str
    entities: list[RegisteredInput]
    #: The versions the write is based on (an edit of what a page showed): refused with
    #: `VersionConflict` if any entity is no longer at its version, nothing written.
    expected_versions: list[ExpectedVersion] = Field(default_factory=list)


class UpsertDone(BaseModel):
    entities: list[JsonDoc]
    results: list[JsonDoc]


class DeleteCall(Call):
    entity_type: str
    entity_id: str


class DeleteDone(BaseModel):
    deleted: bool


class MergeCall(Call):
    """Merge `other` into `keep` (two entities of `entity_type`, at the versions seen)."""

    entity_type: str
    keep: ExpectedVersion
    other: ExpectedVersion


class MergeDone(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    entity: JsonDoc
    merged: EntityRefModel
    session_id: str
    #: The other's name and aliases left out: the kept entity holds at most `MAX_ALIASES`.
    dropped_aliases: list[str]


class ExtractCall(Call):
    session_id: str
    messages: list[Message]
    extractor: str | None = None
    #: The date a re-sent session was first extracted (the scheduled retry sets it).
    session_now: int | None = None
    #: The job this call is a chunk of: it runs only while the job exists, so a chunk that
    #: waited for the writer behind an erasure writes nothing.
    job_id: str | None = None


class JobCall(Call):
    job_id: str


class JobsCall(Call):
    pass


class ReindexCall(Call):
    pass


class ReindexDone(BaseModel):
    entries: int
    restored: int
    dropped: int
    refreshed: int
    embedded: int = 0


class ExpiredCall(Call):
    entities: list[EntityRefModel]


class ExpiredDone(BaseModel):
    dropped: int


class ForgetCall(Call):
    pass


class ForgetDone(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    complete: bool
    kv_keys_deleted: int
    ledger_rows_deleted: dict[str, int] | None = None
    tokens_deleted: int | None = None
    writer_rows_deleted: int | None = None


@dataclass
class WriteContext:
    """What a write works with: the ledger and (built on first use: the job calls need none)
    the store over the writer's KV, the request's bindings, the extractor factory, and the
    writer's own state (None outside a writer)."""

    ledger: Ledger | None
    bindings: Bindings
    factory: ExtractorFactory
    state: WriterState | None = None
    #: The writer's extraction jobs (None outside a writer: an extraction runs in the request).
    jobs: JobBook | None = None
    #: Asks the writer to run its queued jobs soon (its alarm); None outside a writer.
    wake: Callable[[], Awaitable[None]] | None = None
    #: The texts the writer embeds after the answer (None outside a writer: a write embeds
    #: inline, as nothing would come back for them).
    backlog: VectorBacklog | None = None
    built: EntityStore | None = None

    @property
    def store(self) -> EntityStore:
        if self.built is None:
            self.built = build_store(self.bindings, self.ledger)
        return self.built


C = TypeVar("C", bound=Call)
D = TypeVar("D", bound=BaseModel)


@dataclass(frozen=True)
class Operation(Generic[C, D]):
    """One write: its name (the service function's), call and done models, and the function."""

    name: str
    call: type[C]
    done: type[D]
    run: Callable[[WriteContext, C], Awaitable[D]]
    #: Runs alone in the writer (every write). False: it only reads or records the writer's
    #: jobs (synchronous table calls), so it must not wait behind a running extraction.
    serialised: bool = True
    #: Answered only once KV's index holds it, whatever `WRITE_ACK` says (an erasure: its
    #: answer says KV holds nothing of the user).
    indexed_answer: bool = False


#: Every write, by its name (what the writer's RPC method `serve` is called with).
OPERATIONS: dict[str, Operation[Any, Any]] = {}


def operation(
    call: type[C], done: type[D], *, serialised: bool = True, indexed_answer: bool = False
) -> Callable[[Callable[[WriteContext, C], Awaitable[D]]], Operation[C, D]]:
    """Declare the decorated service function as the write of its name."""

    def declare(run: Callable[[WriteContext, C], Awaitable[D]]) -> Operation[C, D]:
        op = Operation(run.__name__, call, done, run, serialised, indexed_answer)
        OPERATIONS[op.name] = op
        return op

    return declare


# --- the service functions, one per call ---------------------------------------------------


@operation(UpsertCall, UpsertDone)
async def upsert(ctx: WriteContext, call: UpsertCall) -> UpsertDone:
    refuse_reserved(call.session_id)
    await check_versions(ctx.store, call.user_id, call.expected_versions)
    backlog, wake = ctx.backlog, ctx.wake
    if backlog is None or wake is None:
        results = await upsert_batch(ctx.store, call.user_id, call.entities, call.session_id)
    else:
        results = await upsert_batch(
            ctx.store,
            call.user_id,
            call.entities,
            call.session_id,
            defer_vectors=lambda refs: backlog.add(call.user_id, refs),
        )
        # Also when this write deferred nothing: a backlog whose alarm was lost (an instance
        # that died before setting it) is picked up by the user's next write.
        if backlog.waiting():
            await wake()  # the alarm embeds them: service/vector_backlog.py
    return UpsertDone(
        entities=[r.entity_json() for r in results],
        results=[r.to_json_dict() for r in results],
    )


@operation(MergeCall, MergeDone)
async def merge_entities(ctx: WriteContext, call: MergeCall) -> MergeDone:
    done = await merge_into(ctx.store, call.user_id, call.entity_type, call.keep, call.other)
    other = EntityRefModel(type=done.other.type, id=done.other.id)
    return MergeDone(
        entity=done.entity.to_json_dict(),
        merged=other,
        session_id=done.session_id,
        dropped_aliases=done.dropped_aliases,
    )


@operation(DeleteCall, DeleteDone)
async def delete_entity(ctx: WriteContext, call: DeleteCall) -> DeleteDone:
    validate_type(call.entity_type)
    validate_id(call.entity_id, "entity")
    return DeleteDone(
        deleted=await remove_entity(ctx.store, call.user_id, call.entity_type, call.entity_id)
    )


def _pipeline(ctx: WriteContext) -> SessionExtraction:
    """The extraction stages, imported when a writer runs one: not at the Worker's start-up."""
    from entity_memory.service.extraction.pipeline import SessionExtraction

    return SessionExtraction(ctx.store, ctx.ledger, ctx.bindings, ctx.factory)


@operation(ExtractCall, ExtractionOutcome)
async def extract(ctx: WriteContext, call: ExtractCall) -> ExtractionOutcome:
    refuse_reserved(call.session_id)
    if call.job_id is not None and (ctx.jobs is None or ctx.jobs.get(call.job_id) is None):
        raise NoSuchJob(call.job_id)
    outcome = await _pipeline(ctx).run(
        call.user_id, call.session_id, call.messages, call.extractor, session_now=call.session_now
    )
    return outcome if ctx.jobs is None else ctx.jobs.settled(call.session_id, outcome)


@operation(ExtractCall, JobView, serialised=False)
async def enqueue_extract(ctx: WriteContext, call: ExtractCall) -> JobView:
    """Check the request, record the job and answer at once; the writer's alarm runs it.
    Outside a writer there is no one to run it later, so it runs here and answers done."""
    from entity_memory.service.extraction.pipeline import admit  # on first use, as `_pipeline`

    refuse_reserved(call.session_id)
    extractor = admit(
        ctx.bindings, ctx.factory, call.user_id, call.session_id, call.messages, call.extractor
    )
    now = ctx.bindings.clock()
    job = Job(
        id=job_id(call.session_id, call.messages),
        user_id=call.user_id,
        session_id=call.session_id,
        state="queued",
        created_at=now,
        updated_at=now,
        messages=len(call.messages),
        chunks_total=len(chunk_ends(call.messages)),
        extractor=extractor,
        now=call.now,
        session_now=call.session_now,
    )
    if ctx.jobs is None:
        outcome = await extract.run(ctx, call)
        job.state, job.chunks_done, job.result = "done", job.chunks_total, outcome.to_json_dict()
        job.pending = outcome.pending
        return job.view()
    job = ctx.jobs.add(job, call.messages)
    if job.resent and job.state == "done":
        # Answered as a re-sent session always was: nothing new (the job keeps its result).
        job.result = ExtractionOutcome.already_processed(job.pending).to_json_dict()
    elif job.state != "done" and ctx.wake is not None:
        await ctx.wake()
    return job.view()


@operation(JobCall, JobView, serialised=False)
async def job_status(ctx: WriteContext, call: JobCall) -> JobView:
    job = None if ctx.jobs is None else ctx.jobs.get(call.job_id)
    if job is None:
        raise NoSuchJob(call.job_id)
    if job.state in ("queued", "running") and ctx.wake is not None:
        await ctx.wake()  # a job whose alarm a crash lost is picked up again
    return job.view()


@operation(JobsCall, JobList, serialised=False)
async def list_jobs(ctx: WriteContext, call: JobsCall) -> JobList:
    return JobList(jobs=[] if ctx.jobs is None else ctx.jobs.list())


class IndexCall(Call):
    pass


class PendingIndex(BaseModel):
    """What a reader of the user's index must use instead of KV's (`WRITE_ACK=committed`):
    `pending` False, KV's; True, `index` (None: the index is being deleted)."""

    pending: bool
    index: str | None = None


@operation(IndexCall, PendingIndex, serialised=False)
async def pending_index(ctx: WriteContext, call: IndexCall) -> PendingIndex:
    """Not a write: a reader's question, answered without the write lock (a job's chunk may
    hold it for minutes). The index of an answered write that KV does not hold yet."""
    if ctx.state is None:
        return PendingIndex(pending=False)
    pending, text = ctx.state.pending_index(index_key(call.user_id))
    return PendingIndex(pending=pending, index=text)


@operation(ReindexCall, ReindexDone)
async def reindex(ctx: WriteContext, call: ReindexCall) -> ReindexDone:
    return ReindexDone(**await reindexing.reindex(ctx.store, call.user_id))


@operation(ExpiredCall, ExpiredDone)
async def drop_expired(ctx: WriteContext, call: ExpiredCall) -> ExpiredDone:
    refs = [(e.type, e.id) for e in call.entities]
    return ExpiredDone(dropped=await expiry.drop_expired(ctx.store, call.user_id, refs))


@operation(ForgetCall, ForgetDone, indexed_answer=True)
async def forget(ctx: WriteContext, call: ForgetCall) -> ForgetDone:
    """Erase the user in KV and D1, API tokens included (last, so a user's own token can
    repeat the call), and the writer's own copy. Repeat while `complete` is false."""
    done = ForgetDone.model_validate(await erasure.forget_user(ctx.store, call.user_id))
    erased_tokens: list[str] = []
    if done.complete and ctx.ledger is not None:
        erased_tokens = await TokenStore(ctx.ledger.db).forget_user(call.user_id)
        done.tokens_deleted = len(erased_tokens)
    if done.complete and ctx.state is not None:
        done.writer_rows_deleted = await ctx.state.forget(erased_tokens)
    return done
