"""Every setting the service reads, typed, and the one registry of their variable names.

The bottom of the package: storage, extraction and service import it downward, and it
imports nothing of theirs. The host (the Worker adapter, the local host, a test) reads the
environment; this module only turns a name -> value lookup into typed, validated settings,
so a bad value fails loudly at the first request instead of falling back quietly.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class EnvVar(StrEnum):
    """The Worker's `[vars]` and secrets the service reads: the only list of their names
    (docs/configuration.md documents each; tests/unit/test_settings.py checks both agree)."""

    EXTRACTOR = "EXTRACTOR"
    LLM_BASE_URL = "LLM_BASE_URL"
    LLM_API_KEY = "LLM_API_KEY"
    LLM_MODEL = "LLM_MODEL"
    LLM_TIMEOUT_S = "LLM_TIMEOUT_S"
    LLM_TEMPERATURE = "LLM_TEMPERATURE"
    LLM_MAX_TOKENS = "LLM_MAX_TOKENS"
    LLM_CONTEXT_TOKENS = "LLM_CONTEXT_TOKENS"
    LLM_ATTEMPTS = "LLM_ATTEMPTS"
    AI_MODEL = "AI_MODEL"
    AI_TIMEOUT_S = "AI_TIMEOUT_S"
    AI_MAX_TOKENS = "AI_MAX_TOKENS"
    API_TOKEN = "API_TOKEN"
    EMBEDDING_MODEL = "EMBEDDING_MODEL"
    WRITE_ACK = "WRITE_ACK"
    ALLOW_CLOCK_OVERRIDE = "ALLOW_CLOCK_OVERRIDE"
    TTL_DAYS_PREFERENCE = "TTL_DAYS_PREFERENCE"
    TTL_DAYS_PAIN_POINT = "TTL_DAYS_PAIN_POINT"
    TTL_DAYS_DECISION = "TTL_DAYS_DECISION"
    TTL_DAYS_CAMPAIGN = "TTL_DAYS_CAMPAIGN"
    TTL_DAYS_METRIC = "TTL_DAYS_METRIC"


VAR_NAMES: tuple[str, ...] = tuple(v.value for v in EnvVar)

DAY_SECONDS = 24 * 60 * 60

#: The TTL of a kind that names no default of its own (domain/kind.py): SPEC best practice 5.
#: Each kind names its default and the variable above that overrides it (domain/kinds/).
DEFAULT_TTL_DAYS = 180
#: The variables that override a kind's TTL in days.
TTL_VARS: tuple[EnvVar, ...] = tuple(v for v in EnvVar if v.value.startswith("TTL_DAYS_"))

#: Extractor names a request or `EXTRACTOR` may give (`auto` picks one, see `resolved_extractor`).
EXTRACTOR_NAMES = ("rules", "workers-ai", "openai")
DEFAULT_EXTRACTOR = "auto"
#: Workers AI model when `AI_MODEL` is unset; why this one: extraction/llm/chat_models.py.
DEFAULT_AI_MODEL = "@cf/zai-org/glm-4.7-flash"
DEFAULT_AI_TIMEOUT_S = 60.0
DEFAULT_LLM_MODEL = "default"
DEFAULT_LLM_TIMEOUT_S = 60.0
#: Output budget per call; a reply cut at this budget is split, not retried as is.
DEFAULT_LLM_MAX_TOKENS = 4096
#: Attempts per model call on 429 / out of capacity / 5xx / timeout (the first one included).
DEFAULT_LLM_ATTEMPTS = 4


class WriteAck(StrEnum):
    """When the user's writer answers a write (`WRITE_ACK`; docs/consistency.md,
    *Back-to-back writes*)."""

    #: Once KV's index holds the write: a reader of KV alone finds it.
    INDEXED = "indexed"
    #: Once the writer's storage and the entity documents hold it; the index reaches KV
    #: behind the answer, and the Worker's index reads ask the writer until it has.
    COMMITTED = "committed"


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


Lookup = Callable[[str], Any]


def _text(raw: Any) -> str | None:
    text = None if raw is None else str(raw).strip()
    return text or None


def _positive_float(name: EnvVar, raw: Any, default: float) -> float:
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


def _positive_int(name: EnvVar, raw: Any, default: int | None) -> int | None:
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


def _temperature(raw: Any) -> float | None:
    text = _text(raw)
    try:
        value = None if text is None else float(text)
    except ValueError:
        raise ValueError(f"LLM_TEMPERATURE must be a number, not {text!r}") from None
    if value is not None and not 0 <= value <= 2:
        raise ValueError("LLM_TEMPERATURE must be between 0 and 2")
    return value


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtractorSettings(_Frozen):
    """Every extraction var, parsed once: `EXTRACTOR`, `AI_*` (Workers AI) and `LLM_*`
    (an OpenAI-compatible server)."""

    extractor: str = DEFAULT_EXTRACTOR
    ai_model: str = DEFAULT_AI_MODEL
    ai_timeout_s: float = DEFAULT_AI_TIMEOUT_S
    #: None: the model's own default (larger for reasoning models, see llm/chat_models.py).
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
        def get(name: EnvVar) -> Any:
            return env.get(name.value)

        extractor = (_text(get(EnvVar.EXTRACTOR)) or DEFAULT_EXTRACTOR).lower()
        if extractor not in (DEFAULT_EXTRACTOR, *EXTRACTOR_NAMES):
            raise ValueError(f"EXTRACTOR must be auto or one of {', '.join(EXTRACTOR_NAMES)}")
        v = EnvVar
        return cls(
            extractor=extractor,
            ai_model=_text(get(v.AI_MODEL)) or DEFAULT_AI_MODEL,
            ai_timeout_s=_positive_float(v.AI_TIMEOUT_S, get(v.AI_TIMEOUT_S), DEFAULT_AI_TIMEOUT_S),
            ai_max_tokens_set=_positive_int(v.AI_MAX_TOKENS, get(v.AI_MAX_TOKENS), None),
            llm_base_url=_text(get(v.LLM_BASE_URL)),
            llm_model=_text(get(v.LLM_MODEL)) or DEFAULT_LLM_MODEL,
            llm_api_key=_text(get(v.LLM_API_KEY)),
            llm_timeout_s=_positive_float(
                v.LLM_TIMEOUT_S, get(v.LLM_TIMEOUT_S), DEFAULT_LLM_TIMEOUT_S
            ),
            llm_temperature=_temperature(get(v.LLM_TEMPERATURE)),
            llm_max_tokens=_positive_int(
                v.LLM_MAX_TOKENS, get(v.LLM_MAX_TOKENS), DEFAULT_LLM_MAX_TOKENS
            )
            or DEFAULT_LLM_MAX_TOKENS,
            llm_context_tokens=_positive_int(v.LLM_CONTEXT_TOKENS, get(v.LLM_CONTEXT_TOKENS), None),
            attempts=_positive_int(v.LLM_ATTEMPTS, get(v.LLM_ATTEMPTS), DEFAULT_LLM_ATTEMPTS)
            or DEFAULT_LLM_ATTEMPTS,
        )


class Settings(_Frozen):
    #: TTL variable name -> days, for those set (a kind's own default applies otherwise).
    ttl_days: dict[str, int] = Field(default_factory=dict)
    api_token: str | None = None
    #: Honour `X-Entity-Memory-Now` (replaying dated sessions in evaluations). Never in production.
    allow_clock_override: bool = False
    #: `EMBEDDING_MODEL`: the Workers AI model of the semantic channel; None or "off": lexical.
    embedding_model: str | None = None
    write_ack: WriteAck = WriteAck.INDEXED

    def ttl_seconds(self, var: str | None, default_days: int) -> int:
        """The TTL of a kind that names `var` (None: no variable) and `default_days`."""
        return self.ttl_days.get(var or "", default_days) * DAY_SECONDS

    @classmethod
    def from_env(cls, lookup: Lookup) -> Settings:
        """Build settings from a name -> value lookup (Worker env, os.environ.get, a dict.get).

        Bad TTL values fail loudly at the first request rather than silently using a default.
        """
        ttl: dict[str, int] = {}
        for name in TTL_VARS:
            raw = lookup(name.value)
            if raw is not None and str(raw).strip():
                days = int(str(raw).strip())
                if days < 1:
                    raise ValueError(f"{name} must be >= 1")
                ttl[name.value] = days
        token = lookup(EnvVar.API_TOKEN.value)
        token = str(token) if token is not None and str(token) else None
        override_raw = str(lookup(EnvVar.ALLOW_CLOCK_OVERRIDE.value) or "")
        override = override_raw.strip().lower() in ("1", "true")
        model = str(lookup(EnvVar.EMBEDDING_MODEL.value) or "").strip() or None
        ack = str(lookup(EnvVar.WRITE_ACK.value) or "").strip().lower() or WriteAck.INDEXED
        if ack not in tuple(WriteAck):
            raise ValueError(f"WRITE_ACK must be one of {', '.join(WriteAck)}, not {ack!r}")
        return cls(
            ttl_days=ttl,
            api_token=token,
            allow_clock_override=override,
            embedding_model=model,
            write_ack=WriteAck(ack),
        )


# --- what the host provides, as plain callables -----------------------------------------------

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
