"""Which stored entities matter for a task: relevance 0.6, importance 0.3, recency 0.1 (SPEC).

Everything here works on index entries alone, so ranking a user's whole memory costs one KV
read. Relevance replaces the SPEC's substring test (where "a" matched every task) with a
BM25-style score over name, aliases and content keywords, normalised to 0..1 by what the
task's own known terms could score at best, so it stays comparable with importance.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any

from entity_memory.domain.kind import always_injected
from entity_memory.domain.models import RankEntry
from entity_memory.domain.task_dates import DAY_MS, dates_in
from entity_memory.domain.text import name_terms, tokenize

RELEVANCE_WEIGHT = 0.6
IMPORTANCE_WEIGHT = 0.3
RECENCY_WEIGHT = 0.1
RECENCY_HORIZON_DAYS = 180
#: Share of relevance taken by semantic similarity where both signals exist (the rest is
#: lexical). Measured with bench/bench_retrieval.py on the dev probes (local e5 model, sign
#: bits, min-max): hit@5/hit@10 0.710/0.862 at 0 (lexical only), 0.739/0.884 at 0.25,
#: 0.703/0.848 at 0.5, 0.667/0.870 at 1. Those probes mostly share words with their entities,
#: so they cannot show the paraphrase and cross-language gains; a quarter keeps a task that
#: only *means* an entity able to find it (tests/unit/test_semantic.py) without diluting
#: exact keyword matches.
SEMANTIC_SHARE = 0.25
#: Entities of each always-injected kind (SPEC best practice 4: `EntityKind.always_injected`)
#: a context holds whatever the task, at most.
ALWAYS_INJECT_PER_TYPE = 5
MAX_KEYWORDS = 24

_K1 = 1.2
_B = 0.75
_NAME_BOOST = 2  # a name term counts as often as this many content terms
#: The most a task's dates add to an entry's 0..1 lexical score. Measured (LoCoMo, dev end to
#: end): 0.5 as good as uncapped, and a task whose words every entry matches ("the CPA in
#: April") cannot push those not said in April below the relevance floor (1 / 1.5 > 0.3).
DATE_BONUS_MAX = 0.5


def _saturate(tf: float, length_norm: float) -> float:
    return tf * (_K1 + 1) / (tf + _K1 * length_norm)


_NO_TERMS: frozenset[str] = frozenset()

#: A name term in a document of average length scores a full match (relevance 1 for that term).
_FULL_MATCH = _saturate(_NAME_BOOST, 1.0)


def keywords_for(
    name: str, aliases: Iterable[str], content: str, extra: Iterable[str]
) -> list[str]:
    """The distinctive terms of an entity kept in its index entry (bounded to keep it small).

    Name and alias terms come first so they are never cut; content terms follow by frequency.
    """
    head: list[str] = []
    for text in (name, *aliases, *extra):
        for term in tokenize(text):
            if term not in head:
                head.append(term)
    counts = Counter(t for t in tokenize(content) if t not in head)
    tail = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return (head + tail)[:MAX_KEYWORDS]


def recency_scores(updated_at_ms: Iterable[int], now_ms: int) -> list[float]:
    """1 for now, falling linearly to 0 at RECENCY_HORIZON_DAYS (one expression for a whole
    index: a call per entry costs more than the arithmetic in Pyodide)."""
    horizon_ms = RECENCY_HORIZON_DAYS * DAY_MS
    return [max(0.0, 1.0 - max(0, now_ms - at) / horizon_ms) for at in updated_at_ms]


@dataclass(frozen=True)
class Score:
    """One entity's score and the signals behind it (what `explain` returns)."""

    id: str
    type: str
    name: str
    score: float
    relevance: float
    importance: float
    recency: float
    matched_terms: tuple[str, ...]
    always_injected: bool = False
    #: The two signals behind relevance; semantic is None without vectors (lexical only).
    lexical: float = 0.0
    semantic: float | None = None
    #: The chosen campaign this entity came with (selection's companions), or the pain point a
    #: decision addresses; None: on its own.
    linked_to: str | None = None
    #: `linked_to`'s type ("campaign" or "pain_point"): ids are unique only within a type.
    linked_type: str | None = None

    def to_json_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "type": self.type,
            "name": self.name,
            "score": round(self.score, 6),
            "relevance": round(self.relevance, 6),
            "importance": round(self.importance, 6),
            "recency": round(self.recency, 6),
            "matchedTerms": list(self.matched_terms),
            "alwaysInjected": self.always_injected,
            "lexical": round(self.lexical, 6),
            "semantic": None if self.semantic is None else round(self.semantic, 6),
            "linkedTo": self.linked_to,
            "linkedType": self.linked_type,
        }


def name_term_count(name: str, keywords: Sequence[str]) -> int:
    """How many leading keywords are the name's (keywords_for puts them first)."""
    unique = list(dict.fromkeys(name_terms(name)))
    return sum(1 for t in unique if t in keywords[: len(unique)])


def _on_days(entries: Sequence[RankEntry], dates: Sequence[str]) -> list[frozenset[str]]:
    """For each entry, the task's dates (days "2023-08-19" or months "2023-08") it was said
    or measured on: a substring test of its `days` per date."""
    out = [_NO_TERMS] * len(entries)
    for i, e in enumerate(entries):
        if e.days:
            found = [d for d in dates if d in e.days]
            if found:
                out[i] = frozenset(found)
    return out


@dataclass(frozen=True)
class Lexical:
    """What the lexical pass found, aligned with the entries."""

    scores: list[float]
    #: The query terms (and dates) each entry contains.
    matched: list[frozenset[str]]
    #: Whether the query holds every term of the entry's name (see `Signals.named`).
    named: list[bool]
    #: How many leading keywords are the entry's name terms.
    name_counts: list[int]
    #: The entries that share a term with the query, in index order.
    hits: list[int]


def _lexical_scores(
    entries: Sequence[RankEntry], query: Sequence[str], dates: Sequence[str] = ()
) -> Lexical:
    """Each entry's 0..1 BM25 relevance to `query`, the query terms it contains, and whether
    the query holds every term of its name (see `Signals.named`).

    Works on the index entry's keyword list alone (name terms first, counted _NAME_BOOST
    times), so ranking never tokenizes stored text at query time. The per-entry work is one
    C-level set intersection; the scoring loop runs only over entries that share a term.
    A day or month the task names counts too (`_said_on`).
    """
    wanted = frozenset(query)
    # How many leading keywords are the name's (counted for entries written before the field).
    n_names = [
        e.name_terms if e.name_terms is not None else name_term_count(e.name, e.keywords)
        for e in entries
    ]
    lengths = [
        len(e.keywords) + (_NAME_BOOST - 1) * n for e, n in zip(entries, n_names, strict=True)
    ]
    matched = [wanted.intersection(e.keywords) for e in entries]
    on_days = _on_days(entries, dates) if dates else []
    n_docs = len(entries) or 1
    avg_len = sum(lengths) / n_docs or 1.0
    doc_freq = Counter(chain.from_iterable(matched))
    doc_freq.update(chain.from_iterable(on_days))
    idf = _idf((*query, *dates), doc_freq, n_docs)
    best_possible = sum(idf[t] for t in query if t in idf)
    lexicals = [0.0] * len(entries)
    named = [False] * len(entries)
    hits = [i for i, terms in enumerate(matched) if terms]
    if not best_possible:
        return Lexical(lexicals, matched, named, n_names, hits)
    # An entry's score depends only on which query terms it has, which of them are name
    # terms, and its length: entries sharing all three share the computation.
    known: dict[tuple[frozenset[str], frozenset[str], int], float] = {}
    for i in hits:
        terms = matched[i]
        n_name, length = n_names[i], lengths[i]
        in_name = terms.intersection(entries[i].keywords[:n_name]) if n_name else _NO_TERMS
        # The leading keywords are the name's distinct terms: all in the query, it is named.
        named[i] = n_name > 0 and len(in_name) == n_name
        signature = (terms, in_name, length)
        lexical = known.get(signature)
        if lexical is None:
            length_norm = 1 - _B + _B * length / avg_len
            raw = sum(
                idf[t]
                * min(1.0, _saturate(_NAME_BOOST if t in in_name else 1, length_norm) / _FULL_MATCH)
                for t in query
                if t in terms
            )
            lexical = known[signature] = min(1.0, raw / best_possible)
        lexicals[i] = lexical
    if not dates:
        return Lexical(lexicals, matched, named, n_names, hits)
    relative = [x / avg_len for x in lengths]
    dated = _said_on(lexicals, matched, on_days, idf, relative, best_possible)
    return Lexical(dated, matched, named, n_names, hits)


def _idf(terms: Iterable[str], doc_freq: Counter[str], n_docs: int) -> dict[str, float]:
    """BM25's idf of each term some entry has, floored at a small positive value so a term in
    every entry still counts a bit."""
    return {
        t: max(0.05, math.log(1 + (n_docs - doc_freq[t] + 0.5) / (doc_freq[t] + 0.5)))
        for t in terms
        if doc_freq[t]
    }


def _said_on(
    words: list[float],
    matched: list[frozenset[str]],
    on_days: list[frozenset[str]],
    idf: dict[str, float],
    relative_lengths: list[float],
    best_possible: float,
) -> list[float]:
    """The lexical scores with the task's dates: a day or month the task names that an entry
    was said on counts as one more matching term (weighed like a content term, by how few
    entries share it, at most DATE_BONUS_MAX), on top of what its words scored. The words'
    normalisation stays, so a date changes no other entry's score, except that when an entry
    that matched every word also matched a date, all are divided by the best score: it still
    outranks those its words alone matched as well, and a full word match stays above the
    floor. An entry sharing no word with the task gets nothing for its date."""
    dated = list(words)
    for i, days in enumerate(on_days):
        if not days or not matched[i]:
            continue
        length_norm = 1 - _B + _B * relative_lengths[i]
        said = sum(idf[d] for d in days) * min(1.0, _saturate(1, length_norm) / _FULL_MATCH)
        dated[i] += min(DATE_BONUS_MAX, said / best_possible)
        matched[i] = matched[i] | days
    top = max(dated, default=0.0)
    return [d / top for d in dated] if top > 1.0 else dated


def _best(
    indices: Sequence[int], k: int, totals: Sequence[float], key: Callable[[int], Any]
) -> list[int]:
    """The k indices first by `key` (whose first element is -total), without building a key
    for every index: a C-level heap on the totals finds the k-th best total, and only the
    entries reaching it (ties included) are ordered by the full key."""
    if k <= 0:
        return []
    if len(indices) <= k:
        return sorted(indices, key=key)
    kth = heapq.nlargest(k, (totals[i] for i in indices))[-1]
    return sorted((i for i in indices if totals[i] >= kth), key=key)[:k]


def _relevances(lexicals: list[float], semantic: Sequence[float | None] | None) -> list[float]:
    """Lexical relevance mixed with semantic similarity; an entry without a vector keeps its
    lexical score."""
    if semantic is None:
        return lexicals
    return [
        lex if sem is None else (1 - SEMANTIC_SHARE) * lex + SEMANTIC_SHARE * sem
        for lex, sem in zip(lexicals, semantic, strict=True)
    ]


def _spread(semantic: Sequence[float | None] | None) -> tuple[float, float] | None:
    """The mean and standard deviation of the similarities (None: fewer than two): unlike the
    min-max relevance, which makes the closest entry 1 whatever the task, how far one stands
    above the user's others says whether it stands out."""
    if semantic is None:
        return None
    present = [s for s in semantic if s is not None]
    if len(present) < 2:
        return None
    mean = math.fsum(present) / len(present)
    variance = max(0.0, math.fsum(map(operator.mul, present, present)) / len(present) - mean**2)
    return mean, math.sqrt(variance)


@dataclass(frozen=True)
class Signals:
    """Every entry's signals for one task, as plain lists aligned with `entries`: what ranking
    and selection read without building a `Score` per entry."""

    entries: Sequence[RankEntry]
    #: The task's terms, then the dates it names (domain/task_dates.py).
    query: list[str]
    lexical: Lexical
    similarity: Sequence[float | None]
    relevances: list[float]
    #: The mean and standard deviation of `similarity` (None: not enough of them).
    spread: tuple[float, float] | None
    importances: list[float]
    recencies: list[float]
    totals: list[float]

    def score_of(self, i: int) -> Score:
        entry = self.entries[i]
        return Score(
            entry.id,
            entry.type,
            entry.name,
            self.totals[i],
            self.relevances[i],
            self.importances[i],
            self.recencies[i],
            tuple(t for t in self.query if t in self.matched[i]),
            lexical=self.lexicals[i],
            semantic=self.similarity[i],
        )

    @property
    def lexicals(self) -> list[float]:
        return self.lexical.scores

    @property
    def matched(self) -> list[frozenset[str]]:
        return self.lexical.matched

    @property
    def names(self) -> list[bool]:
        """Whether the task holds every term of each entry's name (`named`)."""
        return self.lexical.named

    def key(self, i: int) -> tuple[float, int, str]:
        """Best first; ties go to the more recent, then by name."""
        return (-self.totals[i], -self.entries[i].updated_at, self.entries[i].name)

    def named(self, i: int) -> bool:
        """The task names the entity: every term of its name is in the task (however common
        the terms are in the user's memory, which is what lowers relevance in a small one)."""
        return self.names[i]

    def best(self, indices: Sequence[int], k: int) -> list[int]:
        """The k best of `indices`, best first."""
        return _best(indices, k, self.totals, self.key)


def signals(
    entries: Sequence[RankEntry],
    task: str,
    now_ms: int,
    semantic: Sequence[float | None] | None = None,
) -> Signals:
    """Relevance, importance, recency and the weighted total of every entry for `task`."""
    query = list(dict.fromkeys(tokenize(task)))
    dates = dates_in(task, now_ms)
    lexical = _lexical_scores(entries, query, dates)
    importances = [min(1.0, max(0.0, e.importance)) for e in entries]
    recencies = recency_scores([e.updated_at for e in entries], now_ms)
    relevances = _relevances(lexical.scores, semantic)
    spread = _spread(semantic)
    totals = [
        RELEVANCE_WEIGHT * rel + IMPORTANCE_WEIGHT * imp + RECENCY_WEIGHT * rec
        for rel, imp, rec in zip(relevances, importances, recencies, strict=True)
    ]
    similarity = semantic if semantic is not None else [None] * len(entries)
    return Signals(
        entries,
        [*query, *dates],
        lexical,
        similarity,
        relevances,
        spread,
        importances,
        recencies,
        totals,
    )


def score_entries(
    entries: Sequence[RankEntry],
    task: str,
    now_ms: int,
    top: int | None = None,
    semantic: Sequence[float | None] | None = None,
) -> list[Score]:
    """Score every entry for `task`, best first; ties go to the more recent, then by name.

    `semantic` is each entry's 0..1 semantic similarity to the task (None where it has no
    vector), aligned with `entries`; without it ranking is lexical only.

    With `top`, only what `select(..., top)` can use comes back: the best `top`, plus the best
    few of each always-injected type. Plain floats are computed for every entry and a `Score`
    only for the entries that come back, so a 10k-entry index costs a few list passes.
    """
    found = signals(entries, task, now_ms, semantic)
    everything = range(len(entries))
    if top is None:
        return [found.score_of(i) for i in sorted(everything, key=found.key)]
    picked = set(found.best(everything, top))
    for entity_type in always_injected():
        of_type = [i for i in everything if entries[i].type == entity_type]
        picked.update(found.best(of_type, ALWAYS_INJECT_PER_TYPE))
    return [found.score_of(i) for i in sorted(picked, key=found.key)]


def select(ranked: Sequence[Score], limit: int) -> list[Score]:
    """The top `limit`, with preferences and pain points guaranteed a place (best practice 4).

    Up to five of each always-injected type (the context shows at most five per type) take the
    slots of the lowest-ranked other entities, never more than half of `limit` in all.
    """
    if limit <= 0:
        return []
    chosen = list(ranked[:limit])
    reserve_budget = limit // 2
    always = always_injected()
    for entity_type in always:
        have = sum(1 for s in chosen if s.type == entity_type)
        want = min(ALWAYS_INJECT_PER_TYPE, reserve_budget)
        extras = [s for s in ranked[limit:] if s.type == entity_type][: max(0, want - have)]
        for extra in extras:
            victims = [i for i, s in enumerate(chosen) if s.type not in always]
            if len(chosen) >= limit:
                if not victims:
                    break
                chosen.pop(victims[-1])
            chosen.append(replace(extra, always_injected=True))
        reserve_budget -= min(want, have + len(extras))
    return sorted(chosen, key=lambda s: -s.score)
