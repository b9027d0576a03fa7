"""The extractors by name, and which one a deployment gets.

Backends are imported lazily: a Worker that never calls an LLM does not pay for importing its
client at cold start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from entity_memory.extraction.base import ExtractionError, Extractor
from entity_memory.extraction.llm.workers_ai import DEFAULT_MODEL
from entity_memory.service.settings import Bindings

#: Builds the extractor called `name` (tests pass their own to script the extractor's output).
ExtractorFactory = Callable[[str, Bindings], Extractor]

EXTRACTORS = ("rules", "workers-ai", "openai")
LLM_TIMEOUT_S = 60.0


def _seconds(raw: Any) -> float:
    """A timeout var in seconds; unset or unreadable means the default."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return LLM_TIMEOUT_S
    return value if value > 0 else LLM_TIMEOUT_S


def build_extractor(name: str, bindings: Bindings) -> Extractor:
    """The extractor called `name`; ExtractionError when its backend is not configured."""
    env = bindings.vars
    if name == "rules":
        from entity_memory.extraction.rules import RulesExtractor

        return RulesExtractor()
    if name == "workers-ai":
        if bindings.ai_run is None:
            raise ExtractionError("workers-ai: no AI binding")
        from entity_memory.extraction.llm.workers_ai import WorkersAIExtractor

        model = str(env.get("AI_MODEL") or DEFAULT_MODEL)
        timeout = _seconds(env.get("AI_TIMEOUT_S"))
        return WorkersAIExtractor(bindings.ai_run, model=model, timeout_s=timeout)
    if name == "openai":
        base_url = env.get("LLM_BASE_URL")
        if not base_url or bindings.http_post is None:
            raise ExtractionError("openai: LLM_BASE_URL is not set")
        from entity_memory.extraction.llm.openai_compat import OpenAICompatExtractor

        return OpenAICompatExtractor(
            bindings.http_post,
            base_url=str(base_url),
            api_key=str(env["LLM_API_KEY"]) if env.get("LLM_API_KEY") else None,
            model=str(env.get("LLM_MODEL") or "default"),
            timeout_s=_seconds(env.get("LLM_TIMEOUT_S")),
        )
    raise ExtractionError(f"unknown extractor {name!r}")


def configured_extractor(bindings: Bindings) -> str:
    """`[vars] EXTRACTOR`, or `auto`: an OpenAI-compatible endpoint if one is configured, else
    Workers AI if bound, else the rules."""
    name = str(bindings.vars.get("EXTRACTOR") or "auto")
    if name != "auto":
        return name
    if bindings.vars.get("LLM_BASE_URL") and bindings.http_post is not None:
        return "openai"
    if bindings.ai_run is not None:
        return "workers-ai"
    return "rules"
