"""The extractors by name, and which one a deployment gets.

Who gets what: `EXTRACTOR=auto` (the default) picks an OpenAI-compatible server when
LLM_BASE_URL is set, else Workers AI when the AI binding exists, else the offline rules. A
request may name one (`"extractor": "rules"`). An LLM that fails is never silently replaced
by the rules: the pipeline reports `degraded` and keeps the session pending.

Backends are imported lazily: a Worker that never calls an LLM does not pay for importing its
client at cold start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from entity_memory.embeddings.embedder import AiRun
from entity_memory.extraction.base import Extractor, ExtractorUnavailable
from entity_memory.settings import EXTRACTOR_NAMES, ExtractorSettings, HttpPost


class ExtractorBindings(Protocol):
    """What building an extractor needs of a request's bindings (`service.bindings.Bindings`
    has it): the extraction settings and the two ways out, Workers AI and outbound HTTP."""

    @property
    def extraction(self) -> ExtractorSettings: ...

    @property
    def ai_run(self) -> AiRun | None: ...

    @property
    def http_post(self) -> HttpPost | None: ...


#: Builds the extractor called `name` (tests pass their own to script the extractor's output).
ExtractorFactory = Callable[[str, ExtractorBindings], Extractor]

EXTRACTORS = EXTRACTOR_NAMES
LLM_EXTRACTORS = ("workers-ai", "openai")


def build_extractor(name: str, bindings: ExtractorBindings) -> Extractor:
    """The extractor called `name`; ExtractorUnavailable when its backend is not configured."""
    cfg = bindings.extraction
    if name == "rules":
        from entity_memory.extraction.rules import RulesExtractor

        return RulesExtractor()
    if name == "workers-ai":
        if bindings.ai_run is None:
            raise ExtractorUnavailable("workers-ai: no AI binding")
        from entity_memory.extraction.llm.workers_ai import WorkersAIExtractor

        return WorkersAIExtractor(
            bindings.ai_run,
            model=cfg.ai_model,
            timeout_s=cfg.ai_timeout_s,
            max_tokens=cfg.ai_max_tokens_set,
            attempts=cfg.attempts,
        )
    if name == "openai":
        if not cfg.llm_base_url or bindings.http_post is None:
            raise ExtractorUnavailable("openai: LLM_BASE_URL is not set")
        from entity_memory.extraction.llm.openai_compat import OpenAICompatExtractor

        return OpenAICompatExtractor(
            bindings.http_post,
            base_url=cfg.llm_base_url,
            api_key=cfg.llm_api_key,
            model=cfg.llm_model,
            timeout_s=cfg.llm_timeout_s,
            max_tokens=cfg.llm_max_tokens,
            temperature=cfg.llm_temperature,
            context_tokens=cfg.llm_context_tokens,
            attempts=cfg.attempts,
        )
    raise ExtractorUnavailable(f"unknown extractor {name!r}")


def configured_extractor(bindings: ExtractorBindings) -> str:
    """`EXTRACTOR`, or for `auto`: an OpenAI-compatible endpoint if one is configured, else
    Workers AI if bound, else the rules."""
    cfg = bindings.extraction
    if cfg.extractor != "auto":
        return cfg.extractor
    if cfg.llm_base_url and bindings.http_post is not None:
        return "openai"
    if bindings.ai_run is not None:
        return "workers-ai"
    return "rules"
