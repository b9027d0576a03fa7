"""Decisions: what the user commits to ("let's ...", "we'll ...", "I'm going to ..."), or what
the assistant proposed and the user's next turn accepted ("yes, do it"). The proposal, not the
acceptance, is the decision; a proposal nobody accepted is not one."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise, takewhile

from entity_memory.domain.kinds import DECISION
from entity_memory.extraction.rules.campaigns import clauses
from entity_memory.extraction.rules.detector import (
    Conversation,
    Detector,
    SentenceScope,
    latest_wins,
)
from entity_memory.extraction.rules.lexicon import (
    ACCEPTANCE,
    ACTION_VERBS,
    AMBIGUOUS_REASON,
    ARTICLE,
    CHANGE_REPORT,
    DECISION_CUE,
    DECISION_NEGATED,
    FUNCTION_WORDS,
    IMPERATIVE,
    IRREGULAR_PAST,
    LEADING_WORDS,
    LIST_GOES_ON,
    MONEY,
    NOT_A_CHANGE,
    NOT_A_STATEMENT,
    PROPOSAL_CUE,
    REASON,
    REASON_CLAUSE,
    RESERVATION,
    SAID_WHO,
    TOPIC_CHANGE,
    VERB_IT,
    WORKING_TOPIC,
)
from entity_memory.extraction.rules.mentions import MentionFinder
from entity_memory.extraction.rules.names import action_phrase, words
from entity_memory.extraction.rules.sentences import Sentence


@dataclass
class Decision:
    name: str
    action: str
    rationale: str
    campaigns: list[str]
    accepted: bool
    sources: list[Sentence] = field(default_factory=list)


def _first_clause_end(text: str) -> int:
    """Where the first clause ends, reading a comma list as one clause."""
    for _, end in clauses(text):
        if end >= len(text) or not (text[end] == "," and LIST_GOES_ON.match(text[end + 1 :])):
            return end
    return len(text)


def _action(rest: str) -> str | None:
    """The committed action: the clause after the cue, when it starts with an account verb."""
    first_clause = rest[: _first_clause_end(rest)].strip().rstrip(".!")
    ws = words(first_clause)
    if not ws or DECISION_NEGATED.match(first_clause):
        return None
    verb = ws[0].lower()
    stems = {verb, verb.removesuffix("ing"), verb.removesuffix("ing") + "e", verb[:-4]}
    if not stems & ACTION_VERBS:
        return None
    return first_clause


def _about_working(action: str, finder: MentionFinder) -> bool:
    """An action on how the user works with the assistant ("move the weekly report to
    Thursdays"): a preference revised, not a change to the account (unless a campaign or an
    amount is in it)."""
    return bool(WORKING_TOPIC.search(action)) and not (finder.find(action) or MONEY.search(action))


def _decision(
    sentence: Sentence,
    rest: str,
    finder: MentionFinder,
    accepted: bool,
    about: str | None = None,
) -> Decision | None:
    """`about` is the one campaign the turn was about, standing in for "it" ("lower it to
    $25/day")."""
    action = _action(rest)
    if action is None or _about_working(action, finder):
        return None
    if about and VERB_IT.match(action):
        action = VERB_IT.sub(lambda m: f"{m.group(1)} {about}", action, count=1)
    name = action_phrase(action)
    if name is None:
        return None
    name = ARTICLE.sub(" ", name)
    reason = REASON.search(sentence.text)
    mentions = finder.find(action)
    campaigns = sorted({m.name for m in mentions if not m.platform} | ({about} if about else set()))
    if reason and reason.group("conj").lower() in AMBIGUOUS_REASON:
        reason = reason if REASON_CLAUSE.search(reason.group("why")) else None
    why = reason.group("why").strip().rstrip(".") if reason else ""
    return Decision(name, action, why, campaigns, accepted, [sentence])


def from_user(sentence: Sentence, finder: MentionFinder) -> Decision | None:
    """A decision the user states in this sentence."""
    if sentence.role != "user" or NOT_A_STATEMENT.search(sentence.text):
        return None
    m = DECISION_CUE.search(sentence.text) or IMPERATIVE.match(sentence.text)
    return _decision(sentence, m.group("rest"), finder, False) if m else None


def base_verb(word: str) -> str | None:
    """The account verb `word` is the past tense of ("paused" -> "pause", "capped" -> "cap")."""
    w = word.lower()
    if w in IRREGULAR_PAST:
        return IRREGULAR_PAST[w]
    if not w.endswith("ed"):
        return None
    for base in (w[:-1], w[:-2], w[:-3], w[:-3] + "y" if w.endswith("ied") else ""):
        if base in ACTION_VERBS:
            return base
    return None


def reported(sentence: Sentence, finder: MentionFinder) -> Decision | None:
    """A change the assistant reports having made: the user's decision, carried out.

    "I've lowered ...", "Done: added ..." say who did it; a bare past form counts only when a
    campaign's name follows it ("Paused Lotus Search."), since "Increased competition pushed
    CPCs up" and "Paused campaigns cost nothing" start the same way and report nothing."""
    text = sentence.text.strip()
    if sentence.role != "assistant" or NOT_A_STATEMENT.search(text):
        return None
    m = CHANGE_REPORT.match(text)
    base = base_verb(m.group("verb")) if m else None
    if m is None or base is None or base in NOT_A_CHANGE:
        return None
    if not SAID_WHO.match(text):
        after = m.start("rest") + len(m.group("rest")) - len(m.group("rest").lstrip())
        if not any(mention.start <= after < mention.end for mention in finder.find(text)):
            return None
    return _decision(sentence, f"{base}{m.group('rest')}", finder, True)


def _answering(reply: list[Sentence]) -> str:
    """The part of a reply that answers: its sentences up to one that turns to another
    topic ("By the way, ...")."""
    kept = takewhile(lambda s: not TOPIC_CHANGE.match(s.text), reply)
    return " ".join(s.text for s in kept)


def accepted(sentences: list[Sentence], finder: MentionFinder) -> list[Decision]:
    """Proposals of an assistant turn that the next user turn accepted (the last proposal of
    the turn: the one the user was answering)."""
    out: list[Decision] = []
    by_turn: dict[int, list[Sentence]] = {}
    for s in sentences:
        by_turn.setdefault(s.turn, []).append(s)
    turns = sorted(by_turn)
    for this, nxt in pairwise(turns):
        said, reply = by_turn[this], by_turn[nxt]
        if said[0].role != "assistant" or reply[0].role != "user":
            continue
        answer = " ".join(s.text for s in reply)
        if not ACCEPTANCE.match(answer) or RESERVATION.search(_answering(reply)):
            continue
        campaigns = {m.name for s in said for m in finder.find(s.text) if not m.platform}
        about = campaigns.pop() if len(campaigns) == 1 else None
        for s in reversed(said):
            m = PROPOSAL_CUE.search(s.text)
            decision = _decision(s, m.group("rest"), finder, True, about) if m else None
            if decision:
                decision.sources.append(reply[0])
                out.append(decision)
                break
    return out


#: How many turns after a user's loose instruction the assistant's concrete form of it may come
#: (its proposal, the user's yes, its report).
CARRIED_OUT_WITHIN = 3


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in words(text) if w.lower() not in FUNCTION_WORDS | LEADING_WORDS}


def _carried_out(loose: Decision, other: Decision) -> bool:
    """`other` is what the user's loose instruction `loose` became: a decision on a campaign,
    from the turns right after it, about something it spoke of ("try that on the bakery ads"
    -> "Moved Bakery Search onto Maximize Conversions")."""
    gap = other.sources[0].turn - loose.sources[0].turn
    shared = _content_words(loose.action) & _content_words(other.action)
    return bool(other.campaigns) and 0 < gap <= CARRIED_OUT_WITHIN and bool(shared)


def _reported_again(first: Decision, later: Decision) -> bool:
    """`later` reports `first` done: the same campaigns and amounts, a few turns on ("cap the
    bakery ads at $12 a day" accepted, then "Bakery Search now capped at $12 a day")."""
    gap = later.sources[0].turn - first.sources[0].turn
    amounts = {m.group(0) for m in MONEY.finditer(first.action)}
    # What it does, apart from the campaign it does it to ("pause X" and "resume X" share X).
    named = _content_words(" ".join(first.campaigns))
    return (
        0 < gap <= CARRIED_OUT_WITHIN
        and bool(first.campaigns)
        and first.campaigns == later.campaigns
        and amounts == {m.group(0) for m in MONEY.finditer(later.action)}
        and bool((_content_words(first.action) & _content_words(later.action)) - named)
    )


def _superseded(d: Decision, others: list[Decision]) -> bool:
    loose = not d.accepted and not d.campaigns and not MONEY.search(d.action)
    return any((loose and _carried_out(d, o)) or _reported_again(d, o) for o in others)


def settle(decisions: dict[str, Decision]) -> dict[str, Decision]:
    """One decision is kept once: a user's instruction that names no campaign and no amount,
    which the assistant's next turns made concrete, is that concrete decision; a proposal the
    assistant then reports done is the report."""
    return {
        k: d
        for k, d in decisions.items()
        if not _superseded(d, [o for o in decisions.values() if o is not d])
    }


def summary(d: Decision) -> str:
    text = d.action[0].upper() + d.action[1:]
    if d.rationale:
        text += f", because {d.rationale}"
    who = "proposed by the assistant and accepted by the user" if d.accepted else "user decision"
    return f"{text} ({who})."


def metadata(d: Decision) -> dict[str, object]:
    return {
        "action": d.action[:500],
        "rationale": d.rationale[:2000],
        "affected_entities": d.campaigns,
        "reversible": True,
    }


class DecisionDetector(Detector[Decision]):
    """What the user commits to or the assistant reports done, sentence by sentence; then the
    proposals a reply accepted."""

    kind = DECISION

    def in_sentence(self, scope: SentenceScope) -> list[Decision]:
        d = from_user(scope.sentence, scope.finder) or reported(scope.sentence, scope.finder)
        return [d] if d else []

    def in_conversation(self, conversation: Conversation) -> list[Decision]:
        return accepted(conversation.sentences, conversation.finder)

    settle = staticmethod(settle)
    merge = staticmethod(latest_wins)
    summary = staticmethod(summary)
    metadata = staticmethod(metadata)


DETECTOR = DecisionDetector()
