"""Settings read from the Worker's `[vars]` and secrets, and the bindings a request works with.

The API never reads the environment itself: the host (the Worker adapter, the local host, a test)
hands it a `Bindings`, so the core stays free of `js`/`workers` and is configured in one place.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from entity_memory.embeddings.embedder import AiRun
from entity_memory.storage.d1 import D1Database
from entity_memory.storage.held_index import HeldIndex
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


#: Extractor names a request or `EXTRACTOR` may give (`auto` picks one, see `resolved_extractor`).
EXTRACTOR_NAMES = ("rules", "workers-ai", "openai")
DEFAULT_EXTRACTOR = "auto"
#: Workers AI model when `AI_MODEL` is unset; why this one: extraction/llm/catalog.py.
DEFAULT_AI_MODEL = "@cf/zai-org/glm-4.7-flash"
DEFAULT_AI_TIMEOUT_S = 60.0
DEFAULT_LLM_MODEL = "default"
DEFAULT_LLM_TIMEOUT_S = 60.0
#: Output budget per call; a reply cut at this budget is split, not retried as is.
DEFAULT_LLM_MAX_TOKENS = 4096
#: Attempts per model call on 429 / out of capacity / 5xx / timeout (the first one included).
DEFAULT_LLM_ATTEMPTS = 4


def _text(raw: Any) -> str | None:
    text = None if raw is None else str(raw).strip()
    return text or None


def _positive_float(name: str, raw: Any, default: float) -> float:
    text = _text(raw)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be > 0")
    return value


def _positive_int(name: str, raw: Any, default: int | None) -> int | None:
    text = _text(raw)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {text!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be >= 1")
    return value


@dataclass(frozen=True)
class ExtractorSettings:
    """Every extraction var, parsed once: `EXTRACTOR`, `AI_*` (Workers AI) and `LLM_*`
    (an OpenAI-compatible server). A bad value fails loudly instead of falling back quietly."""

    extractor: str = DEFAULT_EXTRACTOR
    ai_model: str = DEFAULT_AI_MODEL
    ai_timeout_s: float = DEFAULT_AI_TIMEOUT_S
    #: None: the model's own default (larger for reasoning models, see catalog.py).
    ai_max_tokens_set: int | None = None
    llm_base_url: str | None = None
    llm_model: str = DEFAULT_LLM_MODEL
    llm_api_key: str | None = None
    llm_timeout_s: float = DEFAULT_LLM_TIMEOUT_S
    #: None: the request carries no temperature (reasoning models reject one).
    llm_temperature: float | None = None
    llm_max_tokens: int = DEFAULT_LLM_MAX_TOKENS
    #: The model's context window in tokens when the catalog does not know the model.
    llm_context_tokens: int | None = None
    attempts: int = DEFAULT_LLM_ATTEMPTS

    @classmethod
    def from_vars(cls, env: Mapping[str, Any]) -> ExtractorSettings:
        extractor = (_text(env.get("EXTRACTOR")) or DEFAULT_EXTRACTOR).lower()
        if extractor not in (DEFAULT_EXTRACTOR, *EXTRACTOR_NAMES):
            raise ValueError(f"EXTRACTOR must be auto or one of {', '.join(EXTRACTOR_NAMES)}")
        temperature = _text(env.get("LLM_TEMPERATURE"))
        try:
            temp = None if temperature is None else float(temperature)
        except ValueError:
            raise ValueError(f"LLM_TEMPERATURE must be a number, not {temperature!r}") from None
        if temp is not None and not 0 <= temp <= 2:
            raise ValueError("LLM_TEMPERATURE must be between 0 and 2")
        return cls(
            extractor=extractor,
            ai_model=_text(env.get("AI_MODEL")) or DEFAULT_AI_MODEL,
            ai_timeout_s=_positive_float(
                "AI_TIMEOUT_S", env.get("AI_TIMEOUT_S"), DEFAULT_AI_TIMEOUT_S
            ),
            ai_max_tokens_set=_positive_int("AI_MAX_TOKENS", env.get("AI_MAX_TOKENS"), None),
            llm_base_url=_text(env.get("LLM_BASE_URL")),
            llm_model=_text(env.get("LLM_MODEL")) or DEFAULT_LLM_MODEL,
            llm_api_key=_text(env.get("LLM_API_KEY")),
            llm_timeout_s=_positive_float(
                "LLM_TIMEOUT_S", env.get("LLM_TIMEOUT_S"), DEFAULT_LLM_TIMEOUT_S
            ),
            llm_temperature=temp,
            llm_max_tokens=_positive_int(
                "LLM_MAX_TOKENS", env.get("LLM_MAX_TOKENS"), DEFAULT_LLM_MAX_TOKENS
            )
            or DEFAULT_LLM_MAX_TOKENS,
            llm_context_tokens=_positive_int(
                "LLM_CONTEXT_TOKENS", env.get("LLM_CONTEXT_TOKENS"), None
            ),
            attempts=_positive_int("LLM_ATTEMPTS", env.get("LLM_ATTEMPTS"), DEFAULT_LLM_ATTEMPTS)
            or DEFAULT_LLM_ATTEMPTS,
        )


@dataclass(frozen=True)
class Settings:
    ttl_days: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_TTL_DAYS))
    api_token: str | None = None
    #: Honour `X-Entity-Memory-Now` (replaying dated sessions in evaluations). Never in production.
    allow_clock_override: bool = False
    #: `EMBEDDING_MODEL`: the Workers AI model of the semantic channel; None or "off": lexical.
    embedding_model: str | None = None

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
        model = str(lookup("EMBEDDING_MODEL") or "").strip() or None
        return cls(
            ttl_days=ttl, api_token=token, allow_clock_override=override, embedding_model=model
        )


#: POST a JSON body: (url, headers, body bytes, timeout seconds) -> (HTTP status, response text)
#: or (status, text, response headers); headers let a client honour `Retry-After`.
#: The Worker passes one over its `fetch`; CPython callers pass any HTTP client.
HttpPost = Callable[
    [str, Mapping[str, str], bytes, float],
    Awaitable[tuple[int, str] | tuple[int, str, Mapping[str, str]]],
]
#: The Workers rate-limit binding: key -> whether this call is within the key's budget.
RateLimit = Callable[[str], Awaitable[bool]]
#: Runs work after the response is sent, kept alive by the runtime (the Worker's waitUntil).
Defer = Callable[[Coroutine[Any, Any, None]], None]


#: The user's writer by user id: a Durable Object stub whose methods are the writer's
#: operations (`service.writes.RemoteWriter` calls them). The Worker's is
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
