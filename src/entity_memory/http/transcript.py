"""The plain-transcript body of the extract route: `user:` / `assistant:` lines."""

from __future__ import annotations

from entity_memory.extraction.base import Message


def transcript_to_messages(transcript: str) -> list[Message]:
    """A plain transcript: `user:` / `assistant:` prefixed lines start messages; text without
    a prefix belongs to the message before it (or is the user's, at the start)."""
    messages: list[Message] = []
    for line in transcript.splitlines():
        head, sep, rest = line.partition(":")
        role = head.strip().lower()
        if sep and role in ("user", "assistant", "system"):
            messages.append(Message(role=role, content=rest.strip()))  # type: ignore[arg-type]
        elif messages:
            messages[-1] = Message(
                role=messages[-1].role, content=f"{messages[-1].content}\n{line}".strip()
            )
        elif line.strip():
            messages.append(Message(role="user", content=line.strip()))
    return messages
