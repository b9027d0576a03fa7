"""The `<entity_memory>` block injected into an agent's prompt, under a token budget.

Identical in output to the SPEC's `assemble_entity_context` (section order, labels, five per
type, words x 1.3 as the token estimate), except that a section whose first item would pass the
budget is left out instead of leaving an empty header behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SECTION_ORDER: tuple[str, ...] = ("preference", "pain_point", "decision", "campaign", "metric")
TYPE_LABELS: dict[str, str] = {
    "campaign": "Known Campaigns",
    "metric": "Historical Metrics",
    "decision": "Prior Decisions",
    "pain_point": "Known Pain Points",
    "preference": "User Preferences",
}
ITEMS_PER_TYPE = 5
TOKENS_PER_WORD = 1.3


def estimate_tokens(text: str) -> float:
    return len(text.split()) * TOKENS_PER_WORD


def assemble_entity_context(entities: Sequence[Mapping[str, Any]], max_tokens: int = 4000) -> str:
    """Group by type in SECTION_ORDER; entities keep the order given (rank order) within a type."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for entity in entities:
        grouped.setdefault(str(entity["type"]), []).append(entity)

    sections = ["<entity_memory>"]
    token_count = 0.0
    for entity_type in SECTION_ORDER:
        items = grouped.get(entity_type, [])
        if not items:
            continue
        label = TYPE_LABELS.get(entity_type, entity_type.title())
        lines: list[str] = []
        for item in items[:ITEMS_PER_TYPE]:
            entry = f"- **{item['name']}**: {item['content']}\n"
            entry_tokens = estimate_tokens(entry)
            if token_count + entry_tokens > max_tokens:
                break
            lines.append(entry)
            token_count += entry_tokens
        if lines:
            sections.append(f"\n### {label}\n" + "".join(lines))
    sections.append("</entity_memory>")
    return "\n".join(sections)
