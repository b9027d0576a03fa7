"""Extraction with any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, llama.cpp,
Ollama, LM Studio, a gateway), through the host's `http_post`.

Request: `POST {base_url}/chat/completions` with `{"model", "messages": [system, user],
"temperature": 0, "response_format": {"type": "json_schema", "json_schema": {"name": "entities",
"schema": <schema>, "strict": false}}}` (+ `max_tokens` when set) and `Authorization: Bearer
<api_key>` when a key is set. A server that rejects `json_schema` with a 400 (or 422) naming
`response_format`/`json_schema` is asked again at once with `{"type": "json_object"}`, and so
is every later call of this extractor. The reply is `choices[0].message.content`; usage comes
from `usage.prompt_tokens` / `usage.completion_tokens`. HTTP 429, 5xx and other errors,
connection failures and timeouts raise `ExtractionError` (the status is in the message).
"""

from __future__ import annotations

import asyncio
import json
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
    DEFAULT_TIMEOUT_S,
    ChatMessages,
    entities_json_schema,
    extract_with_retry,
    usage_from,
)
from entity_memory.service.settings import HttpPost

_SCHEMA_REJECTED = re.compile(r"response_format|json_schema", re.IGNORECASE)
_ERROR_SNIPPET = 300


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_SNIPPET else text[:_ERROR_SNIPPET] + "..."


class OpenAICompatExtractor:
    name = "openai"

    def __init__(
        self,
        http_post: HttpPost,
        base_url: str,
        api_key: str | None = None,
        model: str = "default",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_tokens: int | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required, e.g. http://127.0.0.1:8080/v1")
        self._http_post = http_post
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.api_key = api_key or None
        self.model = model
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        #: "json_schema" until the server rejects it, then "json_object".
        self.response_format = "json_schema"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _body(self, chat: ChatMessages) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": chat, "temperature": 0}
        if self.max_tokens:
            body["max_tokens"] = self.max_tokens
        if self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "entities",
                    "schema": entities_json_schema(),
                    "strict": False,
                },
            }
        else:
            body["response_format"] = {"type": "json_object"}
        return body

    async def _post(self, chat: ChatMessages) -> tuple[int, str]:
        data = json.dumps(self._body(chat), ensure_ascii=False).encode("utf-8")
        try:
            return await asyncio.wait_for(
                self._http_post(self.url, self._headers(), data, self.timeout_s),
                self.timeout_s,
            )
        except TimeoutError:
            raise ExtractionError(
                f"openai_compat: {self.url} gave no answer within {self.timeout_s:g} s (timeout)"
            ) from None
        except Exception as exc:  # connection refused, reset, the client's own timeout, ...
            raise ExtractionError(
                f"openai_compat: POST {self.url} failed ({type(exc).__name__}): {exc}"
            ) from exc

    async def _call(self, chat: ChatMessages) -> tuple[Any, Usage | None]:
        status, text = await self._post(chat)
        if (
            status in (400, 422)
            and self.response_format == "json_schema"
            and _SCHEMA_REJECTED.search(text)
        ):
            self.response_format = "json_object"
            status, text = await self._post(chat)
        if status == 429:
            raise ExtractionError(f"openai_compat: HTTP 429 (rate limited): {_snippet(text)}")
        if status >= 500:
            raise ExtractionError(f"openai_compat: HTTP {status} (server error): {_snippet(text)}")
        if not 200 <= status < 300:
            raise ExtractionError(f"openai_compat: HTTP {status}: {_snippet(text)}")
        try:
            body = json.loads(text)
            message = body["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ExtractionError(
                f"openai_compat: HTTP {status} but not a chat completion: {_snippet(text)}"
            ) from None
        content = message.get("content") if isinstance(message, dict) else None
        usage = usage_from(body.get("usage")) if isinstance(body, dict) else None
        return ("" if content is None else content), usage

    async def extract(
        self, messages: list[Message], known: Sequence[KnownEntity], now_ms: int
    ) -> ExtractionResult:
        return await extract_with_retry(self.name, self._call, messages, known)
