"""Which ranked entities go into a context: only what the task needs (issue 22).

Ranking (domain/ranking.py) orders every entry by 0.6 relevance + 0.3 importance + 0.1
recency; selection decides what is worth a place, reading index entries only:

- entities whose relevance to the task reaches RELEVANCE_FLOOR, or that the task names (every
  word of the name in the task), best first;
- when the task asks for a kind by the kind's own words ("the performance report", "the
  numbers": metrics), that kind's best open entities, ASKED_PER_KIND of them;
- preferences and open pain points, always (SPEC best practice 4: up to five of each; a third
  of `limit` is theirs, the rest of their places come after the task's own entities);
- for each chosen campaign, the entities linked to it (domain/links.py): its metrics, its most
  recent decisions and its open pain points, in the slots left;
- for each pain point the task is about, the most recent decisions taken against it (those
  whose `affectedEntities` name it), in the slots still left;
- the campaign that two or more of the task's entities are linked to, or one when the task
  holds a word of its name, when the task did not find it itself (in a free place or that of
  the weakest entry linked to no owner, and it brings nothing more along);
- when nothing reaches the floor (the task names nothing known), or only always-injected
  entities do and they bring no decisions, the few most important recent entities instead, and
  the selection says so (`fallback`).

`limit` is a ceiling, never a quota: slots nothing relevant fills stay empty.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import zip_longest

from entity_memory.domain.kind import (
    addressed_type,
    addresses,
    always_injected,
    asked_types,
    companions,
    kind_of,
    link_target_type,
)
from entity_memory.domain.models import RankEntry
from entity_memory.domain.ranking import (
    ALWAYS_INJECT_PER_TYPE,
    SEMANTIC_SHARE,
    Score,
    Signals,
)

#: Relevance (0..1, lexical and semantic mixed) an entity needs to be in the context for the
#: task's sake. Above SEMANTIC_SHARE on purpose: semantic similarity is rescaled min-max over
#: the user's own entries, so it says which entity is *closest* to any task, never that one is
#: close; alone it can order entities, not admit them (a task that only means an entity still
#: gets it first in the fallback, which ranks by the same score). Measured with
#: bench/bench_retrieval.py --floors on the dev probes (docs/retrieval.md has the table):
#: 0.3 is the lowest round value above the semantic share; hit@10 lexical 0.775, hybrid 0.841
#: (0.862 for both with no floor), answers of 10.7-11.3 entities instead of 20, and a task from
#: another scenario gets its preferences and pain points plus about 3 others instead of 13.
RELEVANCE_FLOOR = 0.3
assert RELEVANCE_FLOOR > SEMANTIC_SHARE
#: ...but once the task is about the memory (something passed the floor), an entity whose
#: similarity to the task stands this many standard deviations above the user's other entries
#: is about it too, even sharing no word with it ("What does she do to unwind?" and "signed up
#: for a pottery class"); at most STANDOUT_MAX of them, the closest, since in any large memory
#: a few percent of entries stand that far out by chance. A task about nothing stored keeps
#: its fallback. Measured on LoCoMo and the dev probes together (bench/bench_retrieval.py;
#: docs/retrieval.md): LoCoMo R@5/R@10 0.559/0.602 -> 0.568/0.619 with the dev figures as they
#: were (hit@5/hit@10 0.717/0.855, contains 0.761); at 1.5 deviations dev contains drops
#: (0.717), at 3 and above nothing changes; uncapped, R@10 is 0.621.
STANDOUT_ADMITS = 2.0
STANDOUT_MAX = 3
#: How many of a kind's entities a task that asks for the kind by its words gets ("prepare
#: the performance report": the metrics), the best ranked, when they share no other word
#: with it: a report needs its numbers, not only the report preference the word matched.
ASKED_PER_KIND = 5
#: What a task that names nothing known gets besides preferences and open pain points: a short
#: "what has been going on", not a dump of the memory.
FALLBACK_ENTITIES = 3
#: A campaign that this many of the task's own entities are linked to is what the task is
#: about even when the task calls it something else ("the gravel numbers" for a campaign
#: named "Northwind Bikes" whose metrics say "Gravel"); one is enough when the task holds a
#: word of the campaign's name ("the northwind cargo orders"). It takes a free place or that
#: of the weakest entry linked to no owner, so the block can group them under it, and never
#: pushes out what brought it. At most OWNERS_MAX such campaigns.
OWNER_LINKS = 2
OWNERS_MAX = 2
#: Decisions a pain point the task is about brings along, the most recent first: what was
#: last tried against it.
FIXES_PER_PAIN = 2
FALLBACK_REASON = "important_recent"
#: The always-injected preferences and open pain points are sure of a third of the limit (one
#: of each type at least, half the limit at most); the rest of their places come after the
#: task's entities and their campaigns' companions.
ALWAYS_RESERVE_DIVISOR = 3


@dataclass(frozen=True)
class Selection:
    scores: list[Score]
    #: How many entities reached the relevance floor.
    relevant: int
    #: Why the selection is not the task's (None: it is): "important_recent".
    fallback: str | None = None
    #: (type, id) -> the campaign ids it is linked to, for the chosen entities with links.
    links: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: decision id -> the ids of the chosen pain points it addresses.
    addresses: dict[str, list[str]] = field(default_factory=dict)


def _always(sig: Signals) -> list[int]:
    """The best preferences and open pain points, alternating (a resolved one is no longer a
    pain)."""
    entries = sig.entries
    always = always_injected()
    of_type = {
        t: [i for i, e in enumerate(entries) if e.type == t and not e.resolved] for t in always
    }
    best = [sig.best(of_type[t], ALWAYS_INJECT_PER_TYPE) for t in always]
    # Alternating, so a reserve shorter than the list holds some of each type.
    return [i for group in zip_longest(*best) for i in group if i is not None]


def _companions(sig: Signals, campaigns: Sequence[str], taken: set[int]) -> list[tuple[int, str]]:
    """(index, campaign id) of what the chosen `campaigns` bring, first campaign first."""
    wanted = set(campaigns)
    caps = companions()
    linked: dict[str, dict[str, list[int]]] = {c: {} for c in campaigns}
    for i, entry in enumerate(sig.entries):
        if not entry.links or i in taken or entry.type not in caps or entry.resolved:
            continue
        for campaign in entry.links:
            if campaign in wanted:
                linked[campaign].setdefault(entry.type, []).append(i)
                break
    out: list[tuple[int, str]] = []
    for campaign in campaigns:
        for kind, cap in caps.items():
            found = linked[campaign].get(kind, [])
            # The most recent (a decision: what was last done to it), or the best.
            newest = kind_of(kind).companions_newest
            best = _newest(sig, found, cap) if newest else sig.best(found, cap)
            out += [(i, campaign) for i in best]
    return out


def _fixes(sig: Signals, pains: Sequence[str], taken: set[int]) -> list[tuple[int, str]]:
    """(index, pain point id) of the most recent decisions addressing each of `pains`."""
    if not pains:  # no pain point the task is about: no scan of the index
        return []
    wanted = set(pains)
    found: dict[str, list[int]] = {p: [] for p in pains}
    for i, entry in enumerate(sig.entries):
        if entry.addresses and i not in taken:
            first = next((p for p in entry.addresses if p in wanted), None)
            if first is not None:
                found[first].append(i)
    out: list[tuple[int, str]] = []
    for pain in pains:
        out += [(i, pain) for i in _newest(sig, found[pain], FIXES_PER_PAIN)]
    return out


def _task_fixes(
    sig: Signals, relevant: Sequence[int], chosen: Sequence[int]
) -> list[tuple[int, str]]:
    """What the pain points the task is about (relevant, and among `chosen`) bring: the
    decisions taken against them, best pain point first."""
    about = set(relevant)
    pain = addressed_type()
    pains = [
        sig.entries[i].id
        for i in sorted(chosen, key=sig.key)
        if i in about and sig.entries[i].type == pain
    ]
    return _fixes(sig, pains, set(chosen))


def _newest(sig: Signals, indices: Sequence[int], cap: int) -> list[int]:
    """The `cap` most recently written of `indices` (of one time, the task's own first)."""
    return sorted(indices, key=lambda i: (-sig.entries[i].updated_at, sig.key(i)))[:cap]


def _names_part(sig: Signals, i: int) -> bool:
    """The task holds a term of entry `i`'s name (the leading keywords are the name's)."""
    count = sig.lexical.name_counts[i]
    return not sig.matched[i].isdisjoint(sig.entries[i].keywords[:count])


def _owners(sig: Signals, core: Sequence[int]) -> list[int]:
    """Campaigns (indices) not among `core` that OWNER_LINKS or more of it are linked to, or
    one when the task holds a word of the campaign's name, the most linked first (then by
    score)."""
    entries = sig.entries
    count: dict[str, int] = {}
    for i in core:
        for campaign in entries[i].links or ():
            count[campaign] = count.get(campaign, 0) + 1
    target = link_target_type()
    found_here = {entries[i].id for i in core if entries[i].type == target}
    two = {c for c, n in count.items() if n >= OWNER_LINKS} - found_here
    one = set(count) - found_here - two
    found: list[int] = []
    if two:  # rare: a scan of the index
        found += [i for i, e in enumerate(entries) if e.type == target and e.id in two]
    if one:  # only among the entries sharing a word with the task
        found += [
            i
            for i in sig.lexical.hits
            if entries[i].type == target and entries[i].id in one and _names_part(sig, i)
        ]
    found.sort(key=lambda i: (-count[entries[i].id], sig.key(i)))
    return found[:OWNERS_MAX]


def _with_owners(sig: Signals, core: list[int], room: int, reserved: Sequence[int]) -> list[int]:
    """`core` with its owner campaigns, within `room`: an owner takes a free place or that of
    the weakest entry linked to no owner, so what brought it always stays."""
    owners = [i for i in _owners(sig, core) if i not in reserved]
    owned = {sig.entries[i].id for i in owners}
    out = list(core)
    for owner in owners:
        if len(out) >= room:
            spare = [
                i
                for i in out
                if i not in owners and not owned.intersection(sig.entries[i].links or ())
            ]
            if not spare:
                break
            out.remove(spare[-1])
        out.append(owner)
    return out


def _linked(
    entries: Sequence[RankEntry], taken: set[int]
) -> tuple[dict[tuple[str, str], list[str]], dict[str, list[str]]]:
    """What the block groups by, for the chosen entities: (type, id) -> linked campaign ids,
    and decision id -> the chosen pain points it addresses."""
    links = {(entries[i].type, entries[i].id): entries[i].links for i in taken}
    pain = addressed_type()
    pains = {entries[i].id for i in taken if entries[i].type == pain}
    fixes = {
        entries[i].id: [p for p in entries[i].addresses or () if p in pains]
        for i in taken
        if addresses(entries[i].type)
    }
    return {k: list(v) for k, v in links.items() if v}, {k: v for k, v in fixes.items() if v}


def _asked(sig: Signals, relevant: Sequence[int]) -> list[int]:
    """The best entities of each kind the task asks for by the kind's own words, not yet in
    (an open one: a resolved entity is history, not the current state asked about)."""
    taken = set(relevant)
    out: list[int] = []
    for asked in asked_types(sig.query):
        of_kind = [
            i
            for i, e in enumerate(sig.entries)
            if e.type == asked and i not in taken and not e.resolved
        ]
        out += sig.best(of_kind, ASKED_PER_KIND)
    return out


def choose(sig: Signals, limit: int) -> Selection:
    """The entities for a context of at most `limit`, best first (companions marked).

    Slots go, in order, to: the always-injected entities up to a reserve (a third of the
    limit, at most five a type), the task's relevant entities (with their owner campaigns),
    what their campaigns bring along, the decisions taken against the pain points the task is
    about, and the remaining always-injected ones. At a small limit the task's own entities
    are not crowded out by preferences (measured on the dev probes: hit@10 0.775 -> 0.826
    lexical with half the limit reserved instead of a third, before companions came first).
    """
    if limit <= 0 or not sig.entries:
        return Selection([], 0)
    entries = sig.entries
    names = sig.names
    relevant = [i for i, r in enumerate(sig.relevances) if r >= RELEVANCE_FLOOR or names[i]]
    if relevant and sig.spread is not None and sig.spread[1] > 0:
        standout = sig.spread[0] + STANDOUT_ADMITS * sig.spread[1]
        admitted = set(relevant)
        outstanding = [
            i
            for i, sim in enumerate(sig.similarity)
            if sim is not None and sim >= standout and i not in admitted
        ]
        relevant += heapq.nlargest(STANDOUT_MAX, outstanding, key=lambda i: sig.similarity[i] or 0)
    fallback = None
    always = _always(sig)
    reserve = min(max(len(always_injected()), limit // ALWAYS_RESERVE_DIVISOR), max(1, limit // 2))
    reserved = always[:reserve]
    room = limit - len(reserved)
    core = [i for i in sig.best(relevant, limit) if i not in reserved][:room]
    # Only the task's own campaigns bring companions; an owner came for what is already here.
    target, pain = link_target_type(), addressed_type()
    campaigns = [entries[i].id for i in core if entries[i].type == target]
    core = _with_owners(sig, core, room, reserved)
    fixes = _task_fixes(sig, relevant, [*core, *reserved])
    asked = _asked(sig, [*relevant, *reserved])
    if not core and not fixes and not asked:  # only preferences and pain points, nothing asked
        fallback = FALLBACK_REASON
        kept = always_injected()
        others = [i for i, e in enumerate(entries) if e.type not in kept]
        core = sig.best(others, min(FALLBACK_ENTITIES, room))
    chosen = [sig.score_of(i) for i in core]
    taken = set(core) | set(reserved)
    if campaigns and fallback is None:
        for i, campaign in _companions(sig, campaigns, taken)[: room - len(chosen)]:
            chosen.append(replace(sig.score_of(i), linked_to=campaign, linked_type=target))
            taken.add(i)
    for i, fixed in [(i, p) for i, p in fixes if i not in taken][: room - len(chosen)]:
        chosen.append(replace(sig.score_of(i), linked_to=fixed, linked_type=pain))
        taken.add(i)
    rest = [i for i in always if i not in taken][: limit - len(chosen) - len(reserved)]
    chosen += [replace(sig.score_of(i), always_injected=True) for i in [*reserved, *rest]]
    taken.update([*reserved, *rest])
    # What the task asks for by a kind's words takes only the places left by its own
    # entities, what they brought and the always-injected ones.
    wanted = [i for i in asked if i not in taken][: limit - len(chosen)]
    chosen += [sig.score_of(i) for i in wanted]
    taken.update(wanted)
    chosen.sort(key=lambda s: -s.score)
    return Selection(chosen, len(relevant), fallback, *_linked(entries, taken))
