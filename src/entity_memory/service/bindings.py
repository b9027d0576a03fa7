"""The bindings a request works with: storage, settings, the host's callables, the clock.

The API never reads the environment itself: the host (the Worker adapter, the local host, a
test) hands it a `Bindings`, so the core stays free of `js`/`workers` and is configured in one
place (the settings themselves are `entity_memory.settings`, at the bottom of the package).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from entity_memory.embeddings.embedder import AiRun
from entity_memory.settings import (
    Defer,
    ExtractorSettings,
    HttpPost,
    RateLimit,
    Settings,
    wall_clock_ms,
)
from entity_memory.storage.d1 import D1Database
from entity_memory.storage.held_index import HeldIndex
from entity_memory.storage.index_snapshots import IndexSnapshots
from entity_memory.storage.kv import KVNamespace

#: The user's writer by user id: a Durable Object stub whose one method, `serve`, runs the
#: writer's operations (`service.writers.RemoteWriter` calls it). The Worker's is
#: `env.USER_WRITER.getByName`.
WriterStubs = Callable[[str], Any]


@dataclass
class Bindings:
    """What one request works with: storage, settings and the clock (epoch milliseconds)."""

    kv: KVNamespace
    settings: Settings = field(default_factory=Settings)
    #: The D1 ledger; None where no D1 binding exists (history routes then answer 503).
    db: D1Database | None = None
    #: Workers AI (`env.AI.run`); None where no AI binding exists.
    ai_run: AiRun | None = None
    #: Outbound HTTP for OpenAI-compatible endpoints; None where not available.
    http_post: HttpPost | None = None
    #: Per-token request budget (`[[ratelimits]]` binding RATE_LIMITER); None: unlimited.
    rate_limit: RateLimit | None = None
    #: Where writes go (the user's Durable Object); None: written in this request.
    writers: WriterStubs | None = None
    #: Work a request hands over to run after its response; None: awaited in place.
    defer: Defer | None = None
    #: Inside the user's writer: the parsed index it holds between requests, and KV itself
    #: (`kv` is then the writer's copy over it). None elsewhere.
    held_index: HeldIndex | None = None
    replica: KVNamespace | None = None
    #: The isolate's parsed indexes, kept across its requests (storage/index_snapshots.py);
    #: None: every request parses the index it reads.
    snapshots: IndexSnapshots | None = None
    #: Raw vars and secrets by name (EXTRACTOR, LLM_BASE_URL, LLM_API_KEY, LLM_MODEL, ...).
    vars: Mapping[str, Any] = field(default_factory=dict)
    clock: Callable[[], int] = wall_clock_ms

    @property
    def extraction(self) -> ExtractorSettings:
        """The extraction vars, parsed (once per Bindings: a Bindings lives for one request)."""
        cached = self.__dict__.get("_extraction")
        if cached is None:
            cached = ExtractorSettings.from_vars(self.vars)
            self.__dict__["_extraction"] = cached
        return cached
