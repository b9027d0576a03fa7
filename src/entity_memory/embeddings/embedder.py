"""Embedding texts through Workers AI (the `AI` binding; the local host answers it with a
real local model). A batch of texts goes in as few calls as the model takes
(`EmbeddingModel.texts_per_call`): a write's texts together, a context request's task once.

A failure never fails the request: writes store entities without vectors (they still rank
lexically, and reindex backfills them), retrieval falls back to lexical ranking.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from entity_memory.embeddings.catalog import CATALOG, EmbeddingModel

#: Workers AI: (model, inputs) -> the model's output as Python data.
AiRun = Callable[[str, dict[str, Any]], Awaitable[Any]]

logger = logging.getLogger(__name__)

#: Characters of an entity kept for its embedding (its name and key facts come first).
MAX_EMBED_CHARS = 1_000


class EmbeddingError(Exception):
    """The model did not answer with one vector per text."""


class Embedder:
    def __init__(self, model: EmbeddingModel, ai_run: AiRun) -> None:
        self.model = model
        self._run = ai_run

    async def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"]
    ) -> list[list[float]]:
        out: list[list[float]] = []
        size = self.model.texts_per_call
        for start in range(0, len(texts), size):
            chunk = [t[:MAX_EMBED_CHARS] for t in texts[start : start + size]]
            inputs: dict[str, Any] = {"text": chunk}
            if self.model.input_type:
                inputs["input_type"] = kind
            out += _vectors(await self._run(self.model.name, inputs), len(chunk), self.model.dims)
        return out

    async def try_embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"]
    ) -> list[list[float]] | None:
        """The vectors, or None (logged) when the model fails: callers degrade, never fail."""
        if not texts:
            return []
        try:
            return await self.embed(texts, kind)
        except Exception as exc:  # the AI binding raises plain Errors of many shapes
            logger.warning("embedding with %s failed: %s", self.model.name, exc)
            return None


def _vectors(reply: Any, count: int, dims: int) -> list[list[float]]:
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise EmbeddingError(f"expected {count} vectors, got {type(data).__name__}")
    vectors = []
    for row in data:
        if not isinstance(row, list) or len(row) != dims:
            raise EmbeddingError(f"expected {dims} dimensions")
        vectors.append([float(x) for x in row])
    return vectors


def build_embedder(model_name: str | None, ai_run: AiRun | None) -> Embedder | None:
    """The configured embedder; None when embeddings are off, unknown or no AI is bound."""
    if not model_name or model_name.lower() == "off" or ai_run is None:
        return None
    model = CATALOG.get(model_name)
    if model is None:
        logger.warning("unknown EMBEDDING_MODEL %r: semantic ranking is off", model_name)
        return None
    return Embedder(model, ai_run)
