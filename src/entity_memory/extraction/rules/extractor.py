"""The offline extractor: sentences -> typed facts, as a chain of pure functions.

Each stage reads sentences and returns facts; nothing is shared or mutated between detectors.
Facts about the same entity within a session are merged (the last statement wins) and each
candidate carries the sentences it came from as provenance.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from entity_memory.domain.amounts import mentions_of
from entity_memory.domain.kind import kind_of, link_target_type
from entity_memory.domain.pacing import Pacer
from entity_memory.domain.text import normalize_name
from entity_memory.extraction.base import ExtractionResult, KnownEntity, Message
from entity_memory.extraction.rules import (
    campaigns,
    decisions,
    metrics,
    pain_points,
    preferences,
)
from entity_memory.extraction.rules.detector import (
    Conversation,
    Detector,
    Naming,
    SentenceScope,
)
from entity_memory.extraction.rules.lexicon import BACK_REFERENCE
from entity_memory.extraction.rules.mentions import MentionFinder
from entity_memory.extraction.rules.sentences import Sentence, each_sentence

MAX_PROVENANCE = 3


def provenance(sources: Iterable[Sentence]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for s in sources:
        item = {"excerpt": s.excerpt, "role": s.role}
        if item not in out:
            out.append(item)
    return out[-MAX_PROVENANCE:]


#: One detector per entity type, in the order their facts are listed.
DETECTORS: tuple[Detector[Any], ...] = (
    campaigns.DETECTOR,
    metrics.DETECTOR,
    decisions.DETECTOR,
    preferences.DETECTOR,
    pain_points.DETECTOR,
)
_BY_TYPE = {d.kind.type: d for d in DETECTORS}
TYPES = tuple(_BY_TYPE)


def _add(found: dict[str, dict[str, Any]], detector: Detector[Any], facts: list[Any]) -> None:
    """Each fact under its normalised name; a fact already there takes in the new statement."""
    table = found[detector.kind.type]
    for fact in facts:
        key = normalize_name(fact.name)
        if key in table:
            detector.merge(table[key], fact)
        else:
            table[key] = fact


def _detect(
    messages: list[Message],
    finder: MentionFinder,
    found: dict[str, dict[str, Any]],
    known: tuple[KnownEntity, ...] = (),
) -> Iterator[int]:
    """Fill `found` with every fact of the conversation, yielding after each step of work the
    characters it examined: one sentence (at most MAX_SENTENCE), then each detector's pass
    over the whole conversation, in its own steps (`Detector.conversation_steps`)."""
    sentences: list[Sentence] = []
    context: tuple[int, str] | None = None
    named: set[str] = set()  # the campaigns named so far
    for s in each_sentence(messages):
        sentences.append(s)
        mentions = finder.find(s.text)
        named.update(m.name for m in mentions if not m.platform)
        turn_campaign = context[1] if context and context[0] == s.turn else None
        scope = SentenceScope(
            s,
            finder,
            turn_campaign=turn_campaign if BACK_REFERENCE.search(s.text) else None,
            sole_campaign=next(iter(named)) if len(named) == 1 else None,
        )
        for detector in DETECTORS:
            _add(found, detector, detector.in_sentence(scope))
        if mentions:
            context = (s.turn, mentions[-1].name)
            finder.learn(m.name for m in mentions if not m.platform)
        yield len(s.text)
    conversation = Conversation(messages, sentences, finder, known)
    for detector in DETECTORS:
        _add(found, detector, (yield from detector.conversation_steps(conversation)))
        found[detector.kind.type] = detector.settle(found[detector.kind.type])
        yield 0


def detect_all(
    messages: list[Message], finder: MentionFinder, known: tuple[KnownEntity, ...] = ()
) -> dict[str, dict[str, Any]]:
    """Every fact of the conversation, per type, keyed by normalised name."""
    found: dict[str, dict[str, Any]] = {t: {} for t in TYPES}
    for _ in _detect(messages, finder, found, known):
        pass
    return found


async def detect_all_cooperatively(
    messages: list[Message],
    finder: MentionFinder,
    pacer: Pacer | None = None,
    known: tuple[KnownEntity, ...] = (),
) -> dict[str, dict[str, Any]]:
    """`detect_all`, giving other requests a turn whenever `pacer` says one is due."""
    pacer = pacer or Pacer()
    found: dict[str, dict[str, Any]] = {t: {} for t in TYPES}
    for chars in _detect(messages, finder, found, known):
        await pacer.step(chars)
    return found


def importance(entity_type: str, fact: Any) -> float:
    """The kind's bands for a rules detection (domain/kinds/)."""
    return kind_of(entity_type).importance.of_detection(fact)


def _stating(sources: list[Sentence], meta: dict[str, object]) -> str:
    """The excerpt that states the fact's numbers (a campaign first mentioned, then given a
    budget, is sourced to the budget's sentence); the first one when none has them all."""
    numbers = [
        v for k in ("value", "target", "budget") if isinstance(v := meta.get(k), int | float)
    ]
    for s in sources:
        if all(mentions_of(float(n), s.excerpt) for n in numbers):
            return s.excerpt
    return sources[0].excerpt


def _naming(found: dict[str, dict[str, Any]], known: list[KnownEntity]) -> Naming:
    names: dict[tuple[str, str], str] = {}
    for entity in known:
        for alias in (entity.name, *entity.aliases):
            names.setdefault((entity.type, normalize_name(alias)), entity.name)
    target = link_target_type()
    campaign_names = [k.name for k in known if k.type == target]
    campaign_names += [c.name for c in found.get(target, {}).values()]
    return Naming(known, names, campaign_names)


def to_candidates(
    found: dict[str, dict[str, Any]], known: list[KnownEntity]
) -> list[dict[str, Any]]:
    """Facts -> raw candidates in the SPEC's shape, under the stored name when one exists;
    each type's detector says how its facts are named, told and quoted."""
    naming = _naming(found, known)
    out: list[dict[str, Any]] = []
    for entity_type, facts in found.items():
        detector = _BY_TYPE[entity_type]
        for fact in facts.values():
            others = detector.other_names(fact, naming)
            stored = detector.stored_name(fact, naming, others)
            content = detector.candidate_content(fact, stored is not None)
            if content is None:
                continue
            name = stored or (others[0] if others else fact.name)
            meta = detector.metadata(fact)
            candidate: dict[str, Any] = {
                "type": entity_type,
                "name": name,
                "content": content,
                "importance": importance(entity_type, fact),
                # `source` becomes the stored provenance (the pipeline adds session, date and
                # extractor); the metadata copy also says who said each sentence.
                "source": detector.source(fact) or _stating(fact.sources, meta),
                "metadata": {**meta, "provenance": provenance(fact.sources)},
            }
            aliases = [a for a in (fact.name, *others) if normalize_name(a) != normalize_name(name)]
            if aliases:
                candidate["aliases"] = aliases
            out.append(candidate)
    return out


def extract_candidates(messages: list[Message], known: list[KnownEntity]) -> list[dict[str, Any]]:
    """The whole pipeline, synchronously: what `RulesExtractor.extract` returns as candidates."""
    return to_candidates(detect_all(messages, MentionFinder(known), tuple(known)), known)


class RulesExtractor:
    """The offline extractor: explicit statements only, no model, deterministic."""

    name = "rules"

    async def extract(
        self, messages: list[Message], known: list[KnownEntity], now_ms: int
    ) -> ExtractionResult:
        found = await detect_all_cooperatively(messages, MentionFinder(known), known=tuple(known))
        return ExtractionResult(extractor=self.name, candidates=to_candidates(found, known))
