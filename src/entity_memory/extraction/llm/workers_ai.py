"""Extraction with Workers AI (`env.AI.run`) in JSON mode.

Request: `ai_run(model, {"messages": [system, user], "response_format": <schema in the
model's form>, "max_tokens": N})`, plus `"temperature": 0` for non-reasoning models. The
schema form follows chat_models.py: `{"type": "json_schema", "json_schema": {"name", "schema",
"strict"}}` for newer models, the schema itself under `json_schema` for the older Llama ones.

The binding raises on failure with the Workers AI error in its message
(developers.cloudflare.com/workers-ai/platform/errors/). We read it:
- 3040 "out of capacity", 429 / rate limits, 3007/3008 timeouts, 5xx and upstream errors, or
  no answer within `timeout_s`: retried with backoff (chat.py);
- 5025 "doesn't support JSON Schema" or "JSON Mode couldn't be met": asked again at once
  without `response_format`, and so is every later call of this extractor;
- 3006 "request is too large" or a context-length complaint: the chunk is split;
- anything else (offline the binding throws "needs to be run remotely"): the chunk fails.
JSON mode answers `{"response": {...already parsed...}, "usage": {...}}`; a JSON string in
`response`, an OpenAI-style `choices` list and a bare string are accepted too.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from entity_memory.embeddings.embedder import AiRun
from entity_memory.extraction.base import ExtractionError
from entity_memory.extraction.llm.ask import (
    FREQUENCY_PENALTY,
    REPEAT_PENALTY,
    Ask,
    Reply,
)
from entity_memory.extraction.llm.chat import (
    ChatExtractor,
    PromptTooLong,
    RetryableError,
    Sleep,
)
from entity_memory.extraction.llm.chat_models import REASONING_MAX_TOKENS, workers_ai_spec
from entity_memory.extraction.llm.parsing import usage_from
from entity_memory.extraction.llm.typed import Design
from entity_memory.settings import (
    DEFAULT_AI_MODEL,
    DEFAULT_AI_TIMEOUT_S,
    DEFAULT_LLM_ATTEMPTS,
    DEFAULT_LLM_MAX_TOKENS,
)

DEFAULT_MODEL = DEFAULT_AI_MODEL
_NO_JSON_MODE = re.compile(
    r"\b5025\b|support(s)? json schema|json mode couldn.?t be met", re.IGNORECASE
)
_TRANSIENT = re.compile(
    r"\b(3040|3007|3008|429|5\d\d)\b|capacity|rate.?limit|too many requests|timed? ?out"
    r"|upstream|internal server error|temporarily|unavailable|overloaded",
    re.IGNORECASE,
)
_TOO_LONG = re.compile(
    r"\b3006\b|too large|context (length|window)|too many (input )?tokens|exceeds? .*tokens",
    re.IGNORECASE,
)


def _output(result: Any) -> tuple[Any, bool]:
    """The model's reply inside whatever Workers AI returned, and whether it was cut off."""
    if isinstance(result, dict):
        if "response" in result:
            response = result["response"]
            truncated = str(result.get("finish_reason") or "") == "length"
            return ("" if response is None else response), truncated
        choices = result.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message") or {}
            truncated = choices[0].get("finish_reason") == "length"
            return (message.get("content") or ""), truncated
        if "entities" in result:  # the reply itself, unwrapped
            return result, False
        return "", False
    return ("" if result is None else result), False


class WorkersAIExtractor(ChatExtractor):
    name = "workers-ai"

    def __init__(
        self,
        ai_run: AiRun,
        model: str = DEFAULT_MODEL,
        timeout_s: float = DEFAULT_AI_TIMEOUT_S,
        max_tokens: int | None = None,
        attempts: int = DEFAULT_LLM_ATTEMPTS,
        sleep: Sleep | None = None,
        design: Design | None = None,
        passes: Sequence[str] | None = None,
    ) -> None:
        spec = workers_ai_spec(model)
        if max_tokens is None:
            max_tokens = REASONING_MAX_TOKENS if spec.reasoning else DEFAULT_LLM_MAX_TOKENS
        super().__init__(spec, max_tokens, attempts, sleep, design, passes)
        self._ai_run = ai_run
        self.model = model
        self.timeout_s = timeout_s
        #: Cleared when the model refuses JSON mode, so later calls go without it.
        self.json_mode = True

    def _response_format(self, ask: Ask) -> dict[str, Any]:
        if self.spec.schema_style == "bare":
            return {"type": "json_schema", "json_schema": ask.schema}
        return {
            "type": "json_schema",
            "json_schema": {"name": ask.schema_name, "schema": ask.schema, "strict": False},
        }

    def _inputs(self, ask: Ask) -> dict[str, Any]:
        inputs: dict[str, Any] = {"messages": ask.messages}
        if self.json_mode:
            inputs["response_format"] = self._response_format(ask)
        inputs["max_tokens"] = ask.max_tokens
        if not self.spec.reasoning:
            inputs["temperature"] = 0
            inputs["frequency_penalty"] = FREQUENCY_PENALTY
            inputs["repetition_penalty"] = REPEAT_PENALTY
        return inputs

    async def _run(self, ask: Ask) -> Any:
        try:
            return await asyncio.wait_for(
                self._ai_run(self.model, self._inputs(ask)), self.timeout_s
            )
        except TimeoutError:
            raise RetryableError(
                f"workers_ai: {self.model} gave no answer within {self.timeout_s:g} s (timeout)"
            ) from None
        except ExtractionError:
            raise
        except Exception as exc:
            message = f"workers_ai: {self.model} failed: {exc}"
            if self.json_mode and _NO_JSON_MODE.search(str(exc)):
                self.json_mode = False
                return await self._run(ask)
            if _TOO_LONG.search(str(exc)):
                raise PromptTooLong(message) from exc
            if _TRANSIENT.search(str(exc)):
                raise RetryableError(message) from exc
            raise ExtractionError(message) from exc

    async def _call(self, ask: Ask) -> Reply:
        result = await self._run(ask)
        usage = usage_from(result.get("usage")) if isinstance(result, dict) else None
        raw, truncated = _output(result)
        if usage is not None and usage.output_tokens >= ask.max_tokens:
            truncated = True
        return Reply(raw, usage, truncated)
