"""One writer per user: every write of a user runs here, one at a time.

KV is last-writer-wins and eventually consistent, so two requests writing one user's index
at once lose entries, and two merges of one entity can both read version 3 and both write
version 4. The platform answer is a Durable Object per user (the adapter in
`adapters/durable_object.py`); this module is its logic, runtime-agnostic:

- `WriterState.run(op)` runs one write at a time (an asyncio lock: awaiting KV or D1 yields to
  other requests, so the object's single thread alone does not serialise them);
- `WriterKV` (storage/writer_kv.py) is the KV the write sees: reads come from the writer's
  own table first (what it last wrote, exact), a document goes to KV and then to the table
  (so a crash between the two leaves the table behind KV, never ahead: the retry writes it
  again), and the index key is held in the table and *not* written per request but
  coalesced here: at most one KV write of `index:<user>:entities` per second
  (KV's per-key limit), with group commit: a request is acknowledged only after a flush that
  includes its change, so every acknowledged write is visible in KV's index.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from entity_memory.storage.kv import KVNamespace
from entity_memory.storage.local_table import LocalTable, Row
from entity_memory.storage.writer_kv import HeldCopy, WriterKV

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: KV accepts one write per second per key; the index key is written at most this often.
MIN_INDEX_WRITE_INTERVAL_MS = 1_000
#: How soon the object's alarm retries an index flush that failed.
FLUSH_RETRY_MS = 5_000
#: A row that says the table holds everything of the user (set by an erasure): a key it does
#: not have is absent, never read from KV, whose erased keys may still show for a while.
AUTHORITATIVE_KEY = "writer:authoritative"
#: A row listing the user tokens an erasure deleted (JSON list of token ids): a write that one
#: of them authorised before the erasure, and that reaches the writer after it, is refused.
ERASED_TOKENS_KEY = "writer:erased-tokens"
#: How long those ids are kept: longer than any request can wait for the writer (a chunk of a
#: job holds it for minutes at most); after that no request authorised by them is in flight,
#: and D1 no longer knows them, so no new one can be.
ERASED_TOKENS_KEEP_MS = 24 * 60 * 60 * 1000
#: A row naming the index key whose change was left pending (`publish_within`) until a
#: flush: an instance that dies first leaves KV's index behind its table, and its alarm
#: republishes it (the next write would too, but a user may write nothing for days).
UNPUBLISHED_KEY = "writer:index-unpublished"


class UserErased(PermissionError):
    """The call was authorised by a token that an erasure of the user has since deleted."""


class WriterState:
    """The state of one user's writer: its table, its lock, the pending index write."""

    def __init__(
        self,
        table: LocalTable,
        clock: Callable[[], int],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        schedule_retry: Callable[[int], Awaitable[None]] | None = None,
        empty_storage: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.table, self.clock, self._sleep = table, clock, sleep
        #: Empties the object's storage after an erasure (the platform's `deleteAll`, which
        #: alone frees everything); None: the table compacts itself (a sqlite3 file).
        self._empty_storage = empty_storage
        #: Wakes the writer at an epoch-ms time to retry a failed flush (the object's alarm),
        #: so KV's index heals even if no other write comes.
        self._schedule_retry = schedule_retry
        self.lock = asyncio.Lock()
        #: The index document not yet in KV (key, value; value None: delete the key).
        self._pending: tuple[str, str | None] | None = None
        self._changes = 0  # index changes made so far
        self._flushed = 0  # index changes KV has
        #: Index changes of writes answered before KV had them (`WRITE_ACK=committed`):
        #: until KV has this many, a reader must be given the writer's index (`pending_index`).
        self._answered = 0
        #: Publications running behind such answers (kept so none is collected mid-run).
        self._behind: set[asyncio.Future[None]] = set()
        #: When the alarm set for those answers runs (it republishes after a crash).
        self._alarm_due: int | None = None
        self._last_flush_ms: int | None = None
        self._flushing: asyncio.Future[None] | None = None
        self._inner: KVNamespace | None = None
        self._republished = False
        #: Whether the table's `UNPUBLISHED_KEY` row is set (an index change left pending).
        self._unpublished = False
        self.authoritative = table.get(AUTHORITATIVE_KEY) is not None
        #: The erased token ids and until when they are kept, read once per instance: every
        #: call is checked against them, and only an erasure changes them.
        self._erased, self._erased_until = self._read_erased_tokens()
        #: KV writes of the index key, for the benches (coalescing made visible).
        self.index_writes = 0
        #: The parsed index this writer last read or wrote (key, index, trusted until), kept
        #: between requests; an index read from KV is trusted only as long as its table row.
        self.warm: HeldCopy | None = None
        self.index_trusted_until: int | None = None

    def kv(self, inner: KVNamespace) -> WriterKV:
        self._inner = inner
        return WriterKV(self, inner)

    async def forget(self, erased_tokens: Sequence[str] = ()) -> int:
        """Drop the user's copy (erasure); the number of rows removed.

        The storage is then emptied or compacted, so the erased text is not left in its free
        pages. What is written back holds nothing of the user: a marker that the table holds
        everything of the user (nothing), so nothing erased is read back from KV, and the
        ids of the tokens the erasure deleted, so a write they authorised before it is
        refused (`refuse_erased_token`)."""
        removed = self.table.clear()
        self.warm = None
        self._unpublished = False
        if self._empty_storage is None:
            self.table.compact()
        else:
            await self._empty_storage()
        self.table.put(AUTHORITATIVE_KEY, Row("1", None, None))
        self.authoritative = True
        if erased_tokens:
            until = self.clock() + ERASED_TOKENS_KEEP_MS
            ids = frozenset(erased_tokens) | self._live_erased()
            self.table.put(ERASED_TOKENS_KEY, Row(json.dumps(sorted(ids)), until, None))
            self._erased, self._erased_until = ids, until
        return removed

    def _read_erased_tokens(self) -> tuple[frozenset[str], int | None]:
        row = self.table.get(ERASED_TOKENS_KEY)
        if row is None or row.value is None:
            return frozenset(), None
        return frozenset(json.loads(row.value)), row.expires_at

    def _live_erased(self) -> frozenset[str]:
        if self._erased_until is not None and self._erased_until <= self.clock():
            return frozenset()
        return self._erased

    def refuse_erased_token(self, token_id: str | None) -> None:
        """Raise `UserErased` if an erasure deleted the token that authorised this call."""
        if token_id is not None and token_id in self._live_erased():
            raise UserErased(token_id)

    def index_read(self, key: str, value: str | None) -> None:
        """The first time a new instance reads its own copy of the index, it republishes it:
        a writer that died between writing its copy and flushing KV's left KV behind, and a
        retried write that finds everything `unchanged` would otherwise never flush it.
        (`value` None: the text is not at hand; it is read from the table if needed.)"""
        if not self._republished:
            self._republished = True
            if value is None:
                row = self.table.get(key)
                value = None if row is None else row.value
            if value is not None:
                self.index_changed(key, value)

    def index_changed(self, key: str, value: str | None) -> None:
        self._republished = True
        self._pending = (key, value)
        self._changes += 1

    async def alone(self, op: Callable[[], Awaitable[T]]) -> T:
        """Run `op` alone (the write lock), without waiting for KV's index: for work whose
        index change may reach KV later (`publish_within`). One that raises drops the held
        index: it may have got half-changed."""
        async with self.lock:
            try:
                return await op()
            except BaseException:
                self.warm = None
                raise

    async def run(
        self,
        op: Callable[[], Awaitable[T]],
        failed: Callable[[T], bool] = lambda _: False,
        *,
        acknowledge: bool = True,
        committed: bool = False,
    ) -> T:
        """Run one write alone, then wait until KV's index holds what it changed.

        A write that raises, or whose result `failed` says is a failure (an HTTP app answers
        errors instead of raising them), drops the held index: it may have got half-changed.

        `acknowledge` False (a job's chunk: no client waits on it): the flush is started, not
        waited for, so a job's chunks are not paced by KV's one index write per second and
        their index changes coalesce; the job waits once, before it says it is done.

        `committed` (`WRITE_ACK=committed`): answered once the table holds the change; the
        flush runs behind the answer (`_publish_behind`), and until it is done readers get
        the writer's index (`pending_index`).
        """
        async with self.lock:
            try:
                result = await op()
            except BaseException:
                self.warm = None
                raise
            if failed(result):
                self.warm = None
            ticket = self._changes
        if acknowledge and committed:
            await self._publish_behind(ticket)
        elif acknowledge:
            await self.flushed(ticket)
        else:
            self._flush_behind(ticket)
        return result

    async def settled(self) -> None:
        """Return once KV's index holds every index change made so far."""
        await self.flushed(self._changes)

    def _flush_behind(self, ticket: int) -> None:
        """Start the flush of the first `ticket` changes without waiting for it. A failure
        has already scheduled its retry (`_flush_when_due`); the next waiter sees it too."""
        if self._flushed < ticket and self._flushing is None:
            self._flushing = asyncio.ensure_future(self._flush_when_due())
            self._flushing.add_done_callback(_observe)

    async def _publish_behind(self, ticket: int) -> None:
        """Answer a write before KV's index has its change: note in the table that the
        index is ahead of KV's (an instance killed before the flush leaves the alarm, or the
        next reader or write, something to republish), then flush behind the answer."""
        if self._flushed >= ticket:
            return
        self._answered = max(self._answered, ticket)
        if not self._unpublished and self._pending is not None:
            self.table.put(UNPUBLISHED_KEY, Row(self._pending[0], None, None))
            self._unpublished = True
        now = self.clock()
        if self._alarm_due is None or self._alarm_due <= now:  # one alarm op per 5 s at most
            self._alarm_due = now + FLUSH_RETRY_MS
            await self.retry_at(self._alarm_due)
        self._flush_in_background(ticket)

    def _flush_in_background(self, ticket: int) -> None:
        """Flush until KV holds the first `ticket` changes, with no one waiting: later
        flushes follow if a write lands during one (a failure has set the alarm)."""
        behind = asyncio.ensure_future(self.flushed(ticket))
        self._behind.add(behind)
        behind.add_done_callback(self._behind.discard)
        behind.add_done_callback(_observe)

    def pending_index(self, key: str) -> tuple[bool, str | None]:
        """(whether a reader must use the writer's index instead of KV's, its text).

        True while an answered write's index change is not in KV yet, or, on a new
        instance, while the table says its index is ahead of KV's (a write answered before
        a crash): that index is then republished behind this answer. The text is the one
        the next flush writes (None: the index is deleted)."""
        if not self._republished:
            row = self.table.get(UNPUBLISHED_KEY)
            if row is not None and row.value == key:
                self._unpublished = True
                self.index_read(key, None)
                self._answered = self._changes
                self._flush_in_background(self._changes)
        if self._flushed >= self._answered or self._pending is None or self._pending[0] != key:
            return False, None
        return True, self._pending[1]

    async def publish_within(self, ms: int) -> None:
        """Leave the index change pending (nobody waits for it): the next write's flush
        carries it, or the alarm flushes it within `ms`. A flush of its own would make the
        next write wait out KV's one write a second behind it.

        The table notes that its index is ahead of KV's (`UNPUBLISHED_KEY`), so an instance
        that dies before the flush leaves its alarm something to republish."""
        if self._pending is None:
            return
        key, _ = self._pending
        self.table.put(UNPUBLISHED_KEY, Row(key, None, None))
        self._unpublished = True
        await self.retry_at(self.clock() + ms)

    async def flushed(self, ticket: int) -> None:
        """Return once KV's index holds the first `ticket` index changes."""
        while self._flushed < ticket:
            if self._flushing is None:
                self._flushing = asyncio.ensure_future(self._flush_when_due())
            await asyncio.shield(self._flushing)

    async def retry_at(self, at_ms: int) -> None:
        """Have the object's alarm run again at `at_ms` (no-op without one)."""
        if self._schedule_retry is not None:
            await self._schedule_retry(at_ms)

    async def retry_flush(self) -> None:
        """Flush what a failed flush or `publish_within` left pending (called by the object's
        alarm); a new instance first republishes the index its table notes as unpublished."""
        if not self._republished:
            row = self.table.get(UNPUBLISHED_KEY)
            if row is not None and row.value is not None:
                self._unpublished = True
                self.index_read(row.value, None)
        if self._pending is not None:
            await self.flushed(self._changes)

    async def _flush_when_due(self) -> None:
        try:
            if self._last_flush_ms is not None:
                wait_ms = self._last_flush_ms + MIN_INDEX_WRITE_INTERVAL_MS - self.clock()
                if wait_ms > 0:
                    await self._sleep(wait_ms / 1000)
            changes, pending = self._changes, self._pending
            if pending is not None and self._inner is not None:
                key, value = pending
                if value is None:
                    await self._inner.delete(key)
                else:
                    await self._inner.put(key, value)
                self.index_writes += 1
                self._last_flush_ms = self.clock()
            if self._changes == changes:
                self._pending = None
                if self._unpublished:  # KV's index is the table's again
                    self.table.put(UNPUBLISHED_KEY, Row(None, None, None))
                    self._unpublished = False
            self._flushed = changes
        except Exception:
            await self.retry_at(self.clock() + FLUSH_RETRY_MS)
            raise
        finally:
            self._flushing = None


def _observe(flush: asyncio.Future[None]) -> None:
    """Retrieve a flush's failure that no one awaited (it is logged, and retried)."""
    if not flush.cancelled() and (exc := flush.exception()) is not None:
        logger.warning("index flush failed; retrying: %s", exc)
