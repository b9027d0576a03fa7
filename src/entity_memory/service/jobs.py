"""Extraction jobs: a session's extraction recorded in the user's writer and run off the
request path, one job at a time per user, in chunks of messages.

Why jobs: with a real model a session takes tens of seconds (minutes for a long one), more
than a hook or an agent should wait, and a request that runs it holds its connection and its
user's writer for all that time. `POST .../extract` records the job here and answers at once
(202, with the job's status URL); the writer's alarm runs it (service/writer_host.py).

Why chunks of messages: each chunk is one ordinary `extract` call of the session's first
`end` messages, so the extraction cursor in the ledger (plan.py) extracts only the chunk's new
messages, with the earlier ones as read-only context for an LLM. A chunk is a unit of
progress (`chunksDone`), a point where the user's other writes get their turn in the writer,
and a point a job resumes from after a crash (the cursor skips what was stored).

The jobs live in the writer's own table (`job:<id>` rows and the `jobs` list), so erasing
the user (which clears the table) also drops them, and a running job that finds its row gone
stops before writing anything else.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, JsonValue
from pydantic.alias_generators import to_camel

from entity_memory.domain.limits import MAX_QUEUED_JOB_BYTES, MAX_QUEUED_JOBS
from entity_memory.extraction.base import Message
from entity_memory.storage.local_table import LocalTable, Row

if TYPE_CHECKING:
    from entity_memory.service.extraction.outcome import ExtractionOutcome

JobState = Literal["queued", "running", "done", "failed"]
#: States a job is still to run in (a `running` job a crash interrupted resumes).
RUNNABLE: tuple[JobState, ...] = ("queued", "running")

#: Messages per chunk: one LLM window's worth, and a rules pass short enough (well under a
#: second) that a shared local host keeps answering other requests between chunks.
JOB_CHUNK_MESSAGES = 40
#: Characters per chunk, for sessions of few but very long messages.
JOB_CHUNK_CHARS = 24_000
#: Finished jobs kept per user (newest first); queued and running ones are always kept.
MAX_FINISHED_JOBS = 50

JOB_LIST_KEY = "jobs"
JOB_KEY_PREFIX = "job:"
#: After a job's key: the row holding the conversation it extracts.
CONVERSATION_SUFFIX = ":messages"

JsonDoc = dict[str, JsonValue]


class NoSuchJob(LookupError):
    """No job of this user has the id (never made, dropped as old, or erased)."""


class JobQueueFull(Exception):
    """The user already has as many jobs waiting or running, or as many bytes of their
    conversations, as a user may (`MAX_QUEUED_JOBS`, `MAX_QUEUED_JOB_BYTES`)."""

    def __init__(self, jobs: int, queued_bytes: int, adding_bytes: int) -> None:
        super().__init__(
            f"{jobs} extraction jobs ({queued_bytes} bytes of conversation) are already"
            f" waiting for this user; at most {MAX_QUEUED_JOBS} jobs and"
            f" {MAX_QUEUED_JOB_BYTES} bytes may wait at once: retry once some are done"
        )
        self.jobs, self.queued_bytes, self.adding_bytes = jobs, queued_bytes, adding_bytes


class JobError(BaseModel):
    """Why a job failed, as the API would have answered it inline."""

    status: int
    code: str
    message: str


class JobView(BaseModel):
    """A job as the API shows it (camelCase), without the conversation it carries."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    id: str
    session_id: str
    state: JobState
    created_at: int
    updated_at: int
    messages: int
    chunks_total: int
    chunks_done: int = 0
    extractor: str | None = None
    #: The usual extraction result once done (the body `?wait=true` answers).
    result: JsonDoc | None = None
    error: JobError | None = None
    #: Some messages are pending an LLM retry (the scheduled retry runs them).
    pending: bool = False
    #: This call found the job already recorded (a re-sent session is not run twice).
    resent: bool = False


class Job(JobView):
    """A job as the writer stores it: its view plus what a chunk's call needs. The
    conversation is kept in a row of its own (written once, dropped when the job ends), so
    saving a job's progress after each chunk rewrites only this small row."""

    user_id: str
    #: Epoch ms the Worker's request pinned (evaluations); None: the writer's clock.
    now: int | None = None
    session_now: int | None = None

    def view(self) -> JobView:
        return JobView.model_validate(self.model_dump(include=set(JobView.model_fields)))


class JobList(BaseModel):
    jobs: list[JobView]


def job_id(session_id: str, messages: list[Message]) -> str:
    """The same session with the same messages is the same job (so a re-send finds it);
    more messages make a new job, which extracts only the new ones."""
    doc = "\n".join([session_id] + [f"{m.role}\x00{m.content}" for m in messages])
    return hashlib.sha256(doc.encode()).hexdigest()[:24]


def chunk_ends(messages: list[Message]) -> list[int]:
    """The message counts each chunk extracts up to (the last is all of them)."""
    ends: list[int] = []
    count, chars = 0, 0
    for i, message in enumerate(messages, start=1):
        count, chars = count + 1, chars + len(message.content)
        if count >= JOB_CHUNK_MESSAGES or chars >= JOB_CHUNK_CHARS:
            ends.append(i)
            count, chars = 0, 0
    if not ends or ends[-1] != len(messages):
        ends.append(len(messages))
    return ends


class JobBook:
    """The jobs of one user's writer, in its table. Synchronous, like the table: a job's row
    cannot change between a read and a write of one call."""

    def __init__(self, table: LocalTable) -> None:
        self.table = table

    def get(self, id_: str) -> Job | None:
        row = self.table.get(JOB_KEY_PREFIX + id_)
        return None if row is None or row.value is None else Job.model_validate_json(row.value)

    def save(self, job: Job) -> None:
        self.table.put(JOB_KEY_PREFIX + job.id, Row(job.model_dump_json(), None, None))

    def conversation(self, id_: str) -> list[Message]:
        row = self.table.get(JOB_KEY_PREFIX + id_ + CONVERSATION_SUFFIX)
        if row is None or row.value is None:
            return []
        return Conversation.model_validate_json(row.value).messages

    def finish(self, job: Job) -> None:
        """Save the job's end; the conversation it extracted is no longer needed."""
        self.save(job)
        self.table.put(JOB_KEY_PREFIX + job.id + CONVERSATION_SUFFIX, Row(None, None, None))

    def ids(self) -> list[str]:
        """Newest first."""
        row = self.table.get(JOB_LIST_KEY)
        return [] if row is None or row.value is None else JobIds.model_validate_json(row.value).ids

    def add(self, job: Job, messages: list[Message]) -> Job:
        """Record a new job and the conversation it extracts (or find the one this session's
        messages already made: returned with `resent`; a failed one is queued again)."""
        found = self.get(job.id)
        if found is not None and found.state == "done" and found.pending:
            job = _retry_of(found, job.updated_at)
        elif found is not None and found.state != "failed":
            found.resent = True
            return found
        doc = Conversation(messages=messages).model_dump_json()
        self._admit(len(doc.encode()))
        self.table.put(JOB_KEY_PREFIX + job.id + CONVERSATION_SUFFIX, Row(doc, None, None))
        self.save(job)
        ids = [job.id] + [i for i in self.ids() if i != job.id]
        self._keep(ids)
        return job

    def settled(self, session_id: str, outcome: ExtractionOutcome) -> ExtractionOutcome:
        """After an extraction of the session: if nothing of it is pending any more (e.g. the
        cron's retry extracted it), its jobs stop saying so. The outcome, unchanged."""
        if not outcome.pending:
            self._settle_pending(session_id)
        return outcome

    def _settle_pending(self, session_id: str) -> None:
        for id_ in self.ids():
            job = self.get(id_)
            if job is None or job.session_id != session_id or not job.pending:
                continue
            job.pending = False
            if job.result is not None:
                job.result = {**job.result, "pending": False}
            self.save(job)

    def _admit(self, adding: int) -> None:
        """Refuse a new job past the user's cap of queued jobs or of their bytes."""
        jobs, queued = 0, 0
        for id_ in self.ids():
            job = self.get(id_)
            if job is None or job.state not in RUNNABLE:
                continue
            row = self.table.get(JOB_KEY_PREFIX + id_ + CONVERSATION_SUFFIX)
            jobs += 1
            queued += 0 if row is None or row.value is None else len(row.value.encode())
        if jobs >= MAX_QUEUED_JOBS or queued + adding > MAX_QUEUED_JOB_BYTES:
            raise JobQueueFull(jobs, queued, adding)

    def list(self) -> list[JobView]:
        return [job.view() for i in self.ids() if (job := self.get(i)) is not None]

    def next_runnable(self) -> Job | None:
        """The oldest job still to run."""
        for id_ in reversed(self.ids()):
            job = self.get(id_)
            if job is not None and job.state in RUNNABLE:
                return job
        return None

    def _keep(self, ids: list[str]) -> None:
        kept: list[str] = []
        finished = 0
        for id_ in ids:
            job = self.get(id_)
            if job is None:
                continue
            if job.state not in RUNNABLE:
                finished += 1
                if finished > MAX_FINISHED_JOBS:
                    self.table.put(JOB_KEY_PREFIX + id_, Row(None, None, None))
                    continue  # (a finished job's conversation row is already gone)
            kept.append(id_)
        self.table.put(JOB_LIST_KEY, Row(JobIds(ids=kept).model_dump_json(), None, None))


def _retry_of(done: Job, now: int) -> Job:
    """A done job whose session is still pending, queued again by a re-send: it retries the
    pending messages now instead of waiting for the cron. Only its last chunk runs (all the
    messages: the ledger's cursor plans the pending ranges and nothing else), with the dates
    it first ran with."""
    return done.model_copy(
        update={
            "state": "queued",
            "updated_at": now,
            "chunks_done": max(0, done.chunks_total - 1),
            "result": None,
            "pending": False,
            "resent": True,
        }
    )


class JobIds(BaseModel):
    ids: list[str]


class Conversation(BaseModel):
    messages: list[Message]
