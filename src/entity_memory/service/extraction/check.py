"""Stage 3, check: schema validation, then grounding, on every candidate of any extractor.

What fails is reported in the response's `rejected` with the reason and never stored: a
candidate must match its type's schema (extraction/validate.py) and be traceable to the
session's words (extraction/grounding.py: its excerpt, its numbers, its campaign's name).
"""

from __future__ import annotations

from collections.abc import Sequence

from entity_memory.extraction.base import KnownEntity, Message
from entity_memory.extraction.grounding import ground, session_context
from entity_memory.extraction.validate import validate_candidates
from entity_memory.service.extraction.stage_data import Checked, Extracted


def check(
    extracted: Extracted, messages: Sequence[Message], known: Sequence[KnownEntity]
) -> Checked:
    """`messages`: the whole session (an excerpt may come from any of its turns)."""
    inputs, invalid = validate_candidates(extracted.candidates)
    grounded, ungrounded = ground(inputs, session_context(messages, known))
    rejected = [*extracted.rejected, *invalid]
    rejected += [{"item": r.item, "reason": r.reason, "code": r.code} for r in ungrounded]
    return Checked(inputs=grounded, rejected=rejected)
