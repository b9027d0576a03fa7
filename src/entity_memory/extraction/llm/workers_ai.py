"""Extraction with Workers AI (`env.AI.run`) in JSON mode.

Request: `ai_run(model, {"messages": [system, user], "response_format": {"type": "json_schema",
"json_schema": <schema>}, "max_tokens": N, "temperature": 0})`. JSON mode answers
`{"response": {...already parsed...}, "usage": {...}}`; other shapes are accepted too (a JSON
string in `response`, an OpenAI-style `choices` list, a bare string). A model that cannot meet
JSON mode fails the call ("JSON Mode couldn't be met"); we then ask once more without
`response_format` and parse leniently. Any other failure of `ai_run` (offline it throws "needs to
be run remotely" at once), or no answer within `timeout_s`, is an `ExtractionError`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from entity_memory.extraction.base import (
    ExtractionError,
    ExtractionResult,
    KnownEntity,
    Message,
    Usage,
)
from entity_memory.extraction.llm.chat import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT_S,
    ChatMessages,
    entities_json_schema,
    extract_with_retry,
    usage_from,
)
from entity_memory.service.settings import AiRun

DEFAULT_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
_JSON_MODE_FAILED = re.compile(r"json mode|json_schema|response_format", re.IGNORECASE)


def _output(result: Any) -> Any:
    """The model's reply inside whatever Workers AI returned: parsed JSON or text."""
    if isinstance(result, dict):
        if "response" in result:
            response = result["response"]
            return "" if response is None else response
        choices = result.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message") or {}
            return message.get("content") or ""
        if "entities" in result:  # the reply itself, unwrapped
            return result
        return ""
    return "" if result is None else result


class WorkersAIExtractor:
    name = "workers-ai"

    def __init__(
        self,
        ai_run: AiRun,
        model: str = DEFAULT_MODEL,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self._ai_run = ai_run
        self.model = model
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        #: Cleared when the model refuses JSON mode, so later calls go without it.
        self.json_mode = True

    def _inputs(self, chat: ChatMessages) -> dict[str, Any]:
        inputs: dict[str, Any] = {"messages": chat}
        if self.json_mode:
            inputs["response_format"] = {
                "type": "json_schema",
                "json_schema": entities_json_schema(),
            }
        inputs["max_tokens"] = self.max_tokens
        inputs["temperature"] = 0
        return inputs

    async def _run(self, inputs: dict[str, Any]) -> Any:
        try:
            return await asyncio.wait_for(self._ai_run(self.model, inputs), self.timeout_s)
        except TimeoutError:
            raise ExtractionError(
                f"workers_ai: {self.model} gave no answer within {self.timeout_s:g} s (timeout)"
            ) from None
        except ExtractionError:
            raise
        except Exception as exc:
            raise ExtractionError(f"workers_ai: {self.model} failed: {exc}") from exc

    async def _call(self, chat: ChatMessages) -> tuple[Any, Usage | None]:
        try:
            result = await self._run(self._inputs(chat))
        except ExtractionError as exc:
            if not (self.json_mode and _JSON_MODE_FAILED.search(str(exc))):
                raise
            self.json_mode = False
            result = await self._run(self._inputs(chat))
        usage = usage_from(result.get("usage")) if isinstance(result, dict) else None
        return _output(result), usage

    async def extract(
        self, messages: list[Message], known: Sequence[KnownEntity], now_ms: int
    ) -> ExtractionResult:
        return await extract_with_retry(self.name, self._call, messages, known)
