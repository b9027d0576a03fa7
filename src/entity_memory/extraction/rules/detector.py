"""The one shape of a rules detector: what it reads, what it returns, how its facts combine.

Every entity type has one detector. It reads each sentence in its scope (the sentence, the
campaign mentions, the campaign the turn was about) and, once the sentences are read, the whole
conversation (tables, a proposal and the reply that accepts it); it returns facts, each with a
name and the sentences it came from. The extractor runs every detector the same way, and asks
it how a fact becomes a candidate (under which stored name, with which content and quote), so a
new type is a new detector module and one line in the extractor's list.

A detector subclasses `Detector`, which gives the candidate steps their usual answers (its own
name, its summary, the sentence stating its numbers); a type that needs more overrides one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from entity_memory.domain.kind import EntityKind
from entity_memory.domain.pacing import Steps
from entity_memory.domain.text import normalize_name
from entity_memory.extraction.base import KnownEntity, Message
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
    #: The user's stored entities (a problem stored earlier may be said to be over now).
    known: tuple[KnownEntity, ...] = ()


@dataclass(frozen=True)
class Naming:
    """What the extractor knows when it names a fact: the user's stored entities, their names
    by (type, normalised name or alias), and every campaign named (stored, or found in the
    session)."""

    known: list[KnownEntity]
    stored_names: dict[tuple[str, str], str]
    campaign_names: list[str]

    def stored(self, entity_type: str, *names: str) -> str | None:
        """The stored name of the first of `names` the user has an entity of the type under."""
        for name in names:
            found = self.stored_names.get((entity_type, normalize_name(name)))
            if found is not None:
                return found
        return None


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

    def conversation_steps(self, conversation: Conversation) -> Steps[list[F]]:
        """`in_conversation` in steps that yield the characters each read (the extractor
        gives other requests their turns between them): a detector whose pass reads every
        sentence again yields after each one; by default, one step."""
        facts = self.in_conversation(conversation)
        yield 0
        return facts

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

    def other_names(self, fact: F, naming: Naming) -> list[str]:
        """Names people give the fact besides its own (tried against the stored names after
        it, and kept as aliases)."""
        return []

    def stored_name(self, fact: F, naming: Naming, others: list[str]) -> str | None:
        """The name of the stored entity the fact is about, if the user has one: the one
        stored under its name, else under one of its `others`."""
        return naming.stored(self.kind.type, fact.name, *others)

    def candidate_content(self, fact: F, stored: bool) -> str | None:
        """The candidate's content (`stored`: of an entity the user has): its summary; ""
        leaves the stored one standing; None: the fact makes no candidate."""
        return self.summary(fact)

    def source(self, fact: F) -> str | None:
        """The quote stating what the fact holds, where the detector knows it; None: the
        extractor quotes the sentence that states its numbers."""
        return None


def as_found(facts: dict[str, F]) -> dict[str, F]:
    """`settle` for a type whose facts a later statement never renames."""
    return facts


def latest_wins(into: F, new: F) -> None:
    """A restated preference or decision: the newer wording is the current one."""
    sources = add_sources(into.sources, new.sources)
    into.__dict__.update(new.__dict__)
    into.sources = sources
