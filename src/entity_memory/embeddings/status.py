"""Why a context answer was ranked without the semantic channel.

The channel degrades rather than fails (a Workers AI hiccup must never cost an agent its
memory), so the answer says which ranking it got: a client or an operator can tell a quiet
lexical fallback from a working hybrid ranking without reading logs.
"""

from __future__ import annotations

from typing import Literal

#: off: no EMBEDDING_MODEL (or no AI binding); other_model: the index's vectors were made by
#: another model (reindex re-embeds); few_vectors: too few entries have vectors to read a
#: similarity against; model_failed: the task's embedding call failed or answered malformed.
LexicalReason = Literal["off", "other_model", "few_vectors", "model_failed"]
