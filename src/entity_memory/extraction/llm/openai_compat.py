"""Extraction with any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, llama.cpp
server, Ollama, LM Studio, a gateway), through the host's `http_post`.

Request: `POST {base_url}/chat/completions` with `{"model", "messages": [system, user],
"max_tokens", "response_format": {"type": "json_schema", "json_schema": {"name": "entities",
"schema": <schema>, "strict": false}}}`, `temperature` only when LLM_TEMPERATURE is set and
the model is not a reasoning model (those reject it), and `Authorization: Bearer <api_key>`
when a key is set. A server that rejects `json_schema` with a 400/422 naming
`response_format`/`json_schema` is asked again at once with `{"type": "json_object"}`, and one
that rejects that too, without `response_format`; later calls remember it.

The reply is `choices[0].message.content`; `finish_reason: "length"` means the chunk gets split.
HTTP 408/409/425/429 and 5xx, connection failures and timeouts are retried with backoff
(`Retry-After` honoured); a 400/413 about the context length splits the chunk; other statuses
fail the chunk with the status in the reason.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from entity_memory.domain import safe_json
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
    retry_after_seconds,
)
from entity_memory.extraction.llm.chat_models import openai_spec
from entity_memory.extraction.llm.parsing import usage_from
from entity_memory.extraction.llm.typed import Design
from entity_memory.settings import (
    DEFAULT_LLM_ATTEMPTS,
    DEFAULT_LLM_MAX_TOKENS,
    DEFAULT_LLM_MODEL,
    DEFAULT_LLM_TIMEOUT_S,
    HttpPost,
)

_FORMAT_REJECTED = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)
_TOO_LONG = re.compile(
    r"context.?length|context window|maximum context|too many tokens|prompt is too long"
    r"|exceeds? .*(tokens|context)",
    re.IGNORECASE,
)
_PENALTY_REJECTED = re.compile(r"repeat_penalty", re.IGNORECASE)
_RETRY_STATUSES = {408, 409, 425, 429}
_ERROR_SNIPPET = 300
#: response_format modes, most to least constrained.
_FORMATS = ("json_schema", "json_object", "none")


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_SNIPPET else text[:_ERROR_SNIPPET] + "..."


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


class OpenAICompatExtractor(ChatExtractor):
    name = "openai"

    def __init__(
        self,
        http_post: HttpPost,
        base_url: str,
        api_key: str | None = None,
        model: str = DEFAULT_LLM_MODEL,
        timeout_s: float = DEFAULT_LLM_TIMEOUT_S,
        max_tokens: int = DEFAULT_LLM_MAX_TOKENS,
        temperature: float | None = None,
        context_tokens: int | None = None,
        attempts: int = DEFAULT_LLM_ATTEMPTS,
        sleep: Sleep | None = None,
        design: Design | None = None,
        passes: Sequence[str] | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required, e.g. http://127.0.0.1:8080/v1")
        spec = openai_spec(model, context_tokens)
        super().__init__(spec, max_tokens, attempts, sleep, design, passes)
        self._http_post = http_post
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.api_key = api_key or None
        self.model = model
        self.timeout_s = timeout_s
        self.temperature = temperature
        #: "json_schema" until the server rejects it, then "json_object", then "none".
        self.response_format = "json_schema"
        #: llama.cpp's `repeat_penalty`, until a server rejects the unknown parameter.
        self.repeat_penalty = True

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _body(self, ask: Ask) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": ask.messages,
            "max_tokens": ask.max_tokens,
        }
        if self.temperature is not None and not self.spec.reasoning:
            body["temperature"] = self.temperature
        if not self.spec.reasoning:
            body["frequency_penalty"] = FREQUENCY_PENALTY
            if self.repeat_penalty:
                body["repeat_penalty"] = REPEAT_PENALTY
        if self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": ask.schema_name, "schema": ask.schema, "strict": False},
            }
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    async def _post(self, ask: Ask) -> tuple[int, str, Mapping[str, str]]:
        data = json.dumps(self._body(ask), ensure_ascii=False).encode("utf-8")
        try:
            answer = await asyncio.wait_for(
                self._http_post(self.url, self._headers(), data, self.timeout_s),
                self.timeout_s,
            )
        except TimeoutError:
            raise RetryableError(
                f"openai_compat: {self.url} gave no answer within {self.timeout_s:g} s (timeout)"
            ) from None
        except Exception as exc:  # connection refused, reset, the client's own timeout, ...
            raise RetryableError(
                f"openai_compat: POST {self.url} failed ({type(exc).__name__}): {exc}"
            ) from exc
        if len(answer) == 3:
            return answer  # type: ignore[return-value]
        status, text = answer  # type: ignore[misc]
        return status, text, {}

    async def _call(self, ask: Ask) -> Reply:
        status, text, headers = await self._post(ask)
        if status in (400, 422) and self.repeat_penalty and _PENALTY_REJECTED.search(text):
            self.repeat_penalty = False
            status, text, headers = await self._post(ask)
        while (
            status in (400, 422)
            and self.response_format != "none"
            and _FORMAT_REJECTED.search(text)
            and not _TOO_LONG.search(text)
        ):
            self.response_format = _FORMATS[_FORMATS.index(self.response_format) + 1]
            status, text, headers = await self._post(ask)
        if status in _RETRY_STATUSES or status >= 500:
            kind = "rate limited" if status == 429 else "server error" if status >= 500 else "busy"
            raise RetryableError(
                f"openai_compat: HTTP {status} ({kind}): {_snippet(text)}",
                retry_after_seconds(_header(headers, "retry-after")),
            )
        if status in (400, 413, 422) and _TOO_LONG.search(text):
            raise PromptTooLong(f"openai_compat: HTTP {status}: {_snippet(text)}")
        if not 200 <= status < 300:
            raise ExtractionError(f"openai_compat: HTTP {status}: {_snippet(text)}")
        try:
            body = safe_json.loads(text)
            choice = body["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ExtractionError(
                f"openai_compat: HTTP {status} but not a chat completion: {_snippet(text)}"
            ) from None
        content = message.get("content") if isinstance(message, dict) else None
        usage = usage_from(body.get("usage")) if isinstance(body, dict) else None
        truncated = isinstance(choice, dict) and choice.get("finish_reason") == "length"
        return Reply("" if content is None else content, usage, truncated)
