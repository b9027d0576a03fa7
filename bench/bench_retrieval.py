"""Ranking cost of the semantic channel: time to rank and index size at 1k and 10k entries,
lexical only vs hybrid, on CPython (median of REPEATS runs).

Vectors here are random unit vectors of the production model's size (1024, bge-m3): the cost
of ranking and the size of the index do not depend on what the vectors mean. Retrieval
*quality* (hit@k on the dev probes) needs the model and is not measured by this script.

    .venv/bin/python -m bench.bench_retrieval [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from entity_memory.domain.models import EntityIndex, IndexEntry
from entity_memory.domain.ranking import score_entries
from entity_memory.embeddings.vectors import (
    QueryPlanes,
    centred,
    pack_signs,
    running_mean,
    standardise,
    unpack_signs,
)

DIMS = 1024
REPEATS = 7
NOW = 1_790_000_000_000
WORDS = "brand search shopping retargeting budget cpa roas cpc germany austria pmax video".split()


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
            keywords=rng.sample(WORDS, 4),
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
        return standardise([planes.cosine(unpack_signs(e.vec or "")) for e in index.entries])

    lexical, lex_spread = median_ms(lambda: score_entries(index.entries, task, NOW, top=20))
    sem, _ = median_ms(semantic)
    sims = semantic()
    hybrid, hyb_spread = median_ms(
        lambda: score_entries(index.entries, task, NOW, top=20, semantic=sims)
    )
    return (
        f"{n:>8} {size_plain / 1e6:>18.2f} {size / 1e6:>15.2f} "
        f"{lexical:>8.1f}±{lex_spread / 2:<3.0f}"
        f"{hybrid + sem:>7.1f}±{hyb_spread / 2:<3.0f}{sem:>18.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    rng = random.Random(1)
    task = "bump the budget of the brand search campaign in germany"
    print(
        f"{'entries':>8} {'index MB (no vec)':>18} {'index MB (vec)':>15} "
        f"{'lexical ms':>11} {'hybrid ms':>10} {'of which semantic ms':>21}"
    )
    for n in sizes:
        print(measure(n, rng, task))


if __name__ == "__main__":
    main()
