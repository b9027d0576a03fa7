"""Stage 3, check: schema validation, then grounding, on every candidate of any extractor.

What fails is reported with the reason and never stored: a candidate that must be refused
whole in the response's `rejected` (it does not match its type's schema, extraction/validate.py,
or cannot be traced to the session's words, extraction/grounding.py: its excerpt, its
campaign's name), a single field that fails (a number the conversation does not state) in
`dropped`, the rest of that candidate kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from entity_memory.domain.pacing import Pacer
from entity_memory.extraction.base import KnownEntity, Message
from entity_memory.extraction.grounding import ground_paced
from entity_memory.extraction.validate import validate_candidates
from entity_memory.service.extraction.stage_data import Checked, Extracted


async def check(
    extracted: Extracted,
    messages: Sequence[Message],
    known: Sequence[KnownEntity],
    pacer: Pacer | None = None,
) -> Checked:
    """`messages`: the whole session (an excerpt may come from any of its turns), read in
    steps that give other requests their turns (`pacer`): a job's chunk grounds against
    everything before it, up to the whole 1 MB a session may hold."""
    inputs, invalid = validate_candidates(extracted.candidates)
    grounded = await ground_paced(inputs, messages, known, pacer or Pacer())
    rejected = [*extracted.rejected, *invalid]
    rejected += [{"item": r.item, "reason": r.reason, "code": r.code} for r in grounded.rejected]
    dropped = [d.to_json_dict() for d in grounded.dropped]
    return Checked(inputs=grounded.kept, rejected=rejected, dropped=dropped)
