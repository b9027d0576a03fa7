"""Settings read from the Worker's `[vars]` and secrets, and the bindings a request works with.

The API never reads the environment itself: the host (the Worker adapter, the local host, a test)
hands it a `Bindings`, so the core stays free of `js`/`workers` and is configured in one place.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from entity_memory.storage.d1 import D1Database
from entity_memory.storage.kv import KVNamespace

DAY_SECONDS = 24 * 60 * 60

#: Per-type TTL defaults in days (SPEC best practice 5; decisions are kept longer for audit).
DEFAULT_TTL_DAYS: dict[str, int] = {
    "preference": 180,
    "pain_point": 180,
    "decision": 365,
    "campaign": 180,
    "metric": 30,
}


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Settings:
    ttl_days: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_TTL_DAYS))
    api_token: str | None = None
    #: Honour `X-Entity-Memory-Now` (replaying dated sessions in evaluations). Never in production.
    allow_clock_override: bool = False

    def ttl_seconds(self, entity_type: str) -> int:
        return self.ttl_days[entity_type] * DAY_SECONDS

    @classmethod
    def from_env(cls, lookup: Callable[[str], Any]) -> Settings:
        """Build settings from a name -> value lookup (Worker env, os.environ.get, a dict.get).

        Bad TTL values fail loudly at the first request rather than silently using a default.
        """
        ttl = dict(DEFAULT_TTL_DAYS)
        for entity_type in ttl:
            raw = lookup(f"TTL_DAYS_{entity_type.upper()}")
            if raw is not None and str(raw).strip():
                days = int(str(raw).strip())
                if days < 1:
                    raise ValueError(f"TTL_DAYS_{entity_type.upper()} must be >= 1")
                ttl[entity_type] = days
        token = lookup("API_TOKEN")
        token = str(token) if token is not None and str(token) else None
        override = str(lookup("ALLOW_CLOCK_OVERRIDE") or "").strip().lower() in ("1", "true")
        return cls(ttl_days=ttl, api_token=token, allow_clock_override=override)


#: POST a JSON body: (url, headers, body bytes, timeout seconds) -> (HTTP status, response text).
#: The Worker passes one over its `fetch`; CPython callers pass any HTTP client.
HttpPost = Callable[[str, Mapping[str, str], bytes, float], Awaitable[tuple[int, str]]]
#: The Workers rate-limit binding: key -> whether this call is within the key's budget.
RateLimit = Callable[[str], Awaitable[bool]]
#: Workers AI: (model, inputs) -> the model's output as Python data.
AiRun = Callable[[str, dict[str, Any]], Awaitable[Any]]


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
    #: Raw vars and secrets by name (EXTRACTOR, LLM_BASE_URL, LLM_API_KEY, LLM_MODEL, ...).
    vars: Mapping[str, Any] = field(default_factory=dict)
    clock: Callable[[], int] = wall_clock_ms
