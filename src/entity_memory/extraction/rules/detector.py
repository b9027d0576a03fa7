"""The one shape of a rules detector: what it reads, what it returns, how its facts combine.

Every entity type has one detector. It reads each sentence in its scope (the sentence, the
campaign mentions, the campaign the turn was about) and, once the sentences are read, the whole
conversation (tables, a proposal and the reply that accepts it); it returns facts, each with a
name and the sentences it came from. The extractor runs every detector the same way, so a new
type is a new detector module and one line in the extractor's list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from entity_memory.domain.kind import EntityKind
from entity_memory.extraction.base import Message
from entity_memory.extraction.rules.mentions import MentionFinder
from entity_memory.extraction.rules.sentences import Sentence, add_sources


@dataclass(frozen=True)
class SentenceScope:
    """One sentence and what the sentences before it settled."""

    sentence: Sentence
    finder: MentionFinder
    #: The campaign the turn was about, when this sentence points back at it ("its CPA").
    turn_campaign: str | None = None
    #: The one campaign the conversation has named so far, when it has named only one.
    sole_campaign: str | None = None


@dataclass(frozen=True)
class Conversation:
    """The whole conversation, for facts no single sentence states."""

    messages: list[Message]
    sentences: list[Sentence]
    finder: MentionFinder


class Fact(Protocol):
    """What every detector returns: a named fact and the sentences that state it."""

    @property
    def name(self) -> str: ...

    sources: list[Sentence]


F = TypeVar("F", bound=Fact)


@runtime_checkable
class Detector(Protocol[F]):
    """A detector of one entity type; `F` is that type's fact."""

    #: The entity kind its facts are.
    kind: EntityKind

    def in_sentence(self, scope: SentenceScope) -> list[F]:
        """The facts one sentence states."""
        ...

    def in_conversation(self, conversation: Conversation) -> list[F]:
        """The facts only the whole conversation states (after every sentence was read)."""
        ...

    def settle(self, facts: dict[str, F]) -> dict[str, F]:
        """The session's facts by name, once all are read: a later statement that revises an
        earlier one under another name ("Fridays instead") is folded into it."""
        ...

    def merge(self, into: F, new: F) -> None:
        """Fold a later statement of the same fact (same type, same name) into `into`."""
        ...

    def summary(self, fact: F) -> str:
        """The stored entity's content."""
        ...

    def metadata(self, fact: F) -> dict[str, object]:
        """The stored entity's typed fields."""
        ...


def as_found(facts: dict[str, F]) -> dict[str, F]:
    """`settle` for a type whose facts a later statement never renames."""
    return facts


def latest_wins(into: F, new: F) -> None:
    """A restated preference or decision: the newer wording is the current one."""
    sources = add_sources(into.sources, new.sources)
    into.__dict__.update(new.__dict__)
    into.sources = sources
