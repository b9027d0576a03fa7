"""Benchmark: the offline extractor on the dev evaluation set, recall and precision per type.

For every scenario in ../shared/eval/dev, sessions are extracted in order; the entities from
earlier sessions are passed as `known` (names and aliases merged by slug, as the store would
hold them), so later sessions can reuse stored names. Scored per the eval README (rule 1,
strict and lenient) plus:

- precision per type: the share of extracted entities of a type that match a gold row of their
  session (strict matching; rule 6's "possible false positives" are the rest);
- malformed names (bench/quality.py): ending on a function word, containing "is", cut mid-phrase;
- wrong values: a metric value that is not among the numbers of its matched gold row's facts,
  and a value the session states as a target.

The figures are reported, not asserted. Run from the repository root:
`.venv/bin/python -m bench.bench_extraction [--dev DIR] [--misses] [--fp] [--bad]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.eval_scoring import TYPES, Tally, assign, facts_in_matched, recall
from bench.quality import malformed_name, wrong_values
from entity_memory.domain.keys import slug_for
from entity_memory.extraction.base import KnownEntity, Message
from entity_memory.extraction.rules import RulesExtractor

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT.parent / "shared" / "eval" / "dev"


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _remember(known: dict[tuple[str, str], KnownEntity], cands: list[dict[str, Any]]) -> None:
    for c in cands:
        key = (c["type"], slug_for(c["name"]))
        old = known.get(key)
        aliases = list(old.aliases) if old else []
        for a in c.get("aliases", []):
            if a not in aliases and a != c["name"]:
                aliases.append(a)
        known[key] = KnownEntity(type=c["type"], id=key[1], name=c["name"], aliases=tuple(aliases))


@dataclass
class Figures:
    strict: Tally = field(default_factory=Tally)
    lenient: Tally = field(default_factory=Tally)
    #: Extracted entities per type, and how many of them matched a gold row.
    extracted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    correct: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: Matched leniently: by the entity's aliases, or all of a gold row's facts in its text.
    correct_lenient: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    malformed: list[str] = field(default_factory=list)
    contradicting: list[str] = field(default_factory=list)
    targets_as_values: list[str] = field(default_factory=list)
    facts: list[int] = field(default_factory=lambda: [0, 0])
    sessions: int = 0
    seconds: float = 0.0

    def merge(self, other: Figures) -> None:
        self.strict.merge(other.strict)
        self.lenient.merge(other.lenient)
        for t in TYPES:
            self.extracted[t] += other.extracted[t]
            self.correct[t] += other.correct[t]
            self.correct_lenient[t] += other.correct_lenient[t]
        self.malformed += other.malformed
        self.contradicting += other.contradicting
        self.targets_as_values += other.targets_as_values
        self.facts = [a + b for a, b in zip(self.facts, other.facts, strict=True)]
        self.sessions += other.sessions
        self.seconds += other.seconds


async def run_scenario(path: Path, show: set[str]) -> tuple[str, Figures]:
    data = json.loads(path.read_text())
    extractor = RulesExtractor()
    known: dict[tuple[str, str], KnownEntity] = {}
    fig = Figures()
    for session in data["sessions"]:
        messages = [Message(role=m["role"], content=m["content"]) for m in session["messages"]]
        t0 = time.perf_counter()
        result = await extractor.extract(messages, list(known.values()), _ms(session["date"]))
        fig.seconds += time.perf_counter() - t0
        fig.sessions += 1
        cands, rows = result.candidates, session["expect_entities"]
        where = f"{path.stem}/{session['session_id']}"
        fig.strict.merge(recall(cands, rows))
        fig.lenient.merge(recall(cands, rows, lenient=True))
        ok, matched = facts_in_matched(cands, rows)
        fig.facts = [fig.facts[0] + ok, fig.facts[1] + matched]
        assignment = assign(cands, rows)
        lenient = assign(cands, rows, lenient=True)
        for c, ri, li in zip(cands, assignment, lenient, strict=True):
            fig.extracted[c["type"]] += 1
            fig.correct[c["type"]] += ri >= 0
            fig.correct_lenient[c["type"]] += li >= 0
            if ri < 0 and "fp" in show:
                print(f"  FP   {where} {c['type']}: {c['name']}")
            if why := malformed_name(c["name"]):
                fig.malformed.append(f"{where} {c['type']}: {c['name']!r} ({why})")
        text = "\n".join(m.content for m in messages)
        bad, targets = wrong_values(cands, rows, assignment, text)
        fig.contradicting += [f"{where} {b}" for b in bad]
        fig.targets_as_values += [f"{where} {b}" for b in targets]
        if "misses" in show:
            got = set(assignment)
            for i, row in enumerate(rows):
                if i not in got:
                    print(f"  MISS {where} {row['type']}: {row['name']} {row.get('aliases')}")
        _remember(known, cands)
    return data["scenario"], fig


def _pct(hit: int, total: int) -> str:
    return "    -" if not total else f"{hit / total * 100:5.1f}"


def print_table(results: list[tuple[str, Figures]], lenient: bool = False) -> Figures:
    total = Figures()
    head = f"{'scenario':30}" + "".join(f"{t[:10]:>13}" for t in TYPES) + f"{'overall':>13}"
    print(head + "   (recall% / precision%)")
    print("-" * len(head))
    for name, fig in [*results, ("OVERALL", total)]:
        if name == "OVERALL":
            for _, f in results:
                total.merge(f)
        cells = ""
        tally = fig.lenient if lenient else fig.strict
        correct = fig.correct_lenient if lenient else fig.correct
        for t in TYPES:
            r = _pct(tally.hit[t], tally.total[t])
            p = _pct(correct[t], fig.extracted[t])
            cells += f"{r:>7}/{p:>5}"
        ext, cor = sum(fig.extracted.values()), sum(correct.values())
        r = _pct(tally.hit["overall"], tally.total["overall"])
        cells += f"{r:>7}/{_pct(cor, ext):>5}"
        print(f"{name:30}{cells}")
    return total


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument("--misses", action="store_true", help="list gold rows not matched")
    parser.add_argument("--fp", action="store_true", help="list extracted entities matching none")
    parser.add_argument("--bad", action="store_true", help="list malformed names, wrong values")
    args = parser.parse_args()
    show = {k for k in ("misses", "fp") if getattr(args, k)}
    paths = sorted(args.dev.glob("*.json"))
    results = [await run_scenario(p, show) for p in paths]
    print("\nOffline (rules) extractor on the dev set: recall% / precision% per type")
    print("\nStrict (names as the eval README matches them)")
    total = print_table(results)
    print("\nLenient (also the entity's aliases, or all of a gold row's facts in its text)")
    print_table(results, lenient=True)
    s = total.strict
    print("\nOverall counts:")
    for label, correct in (("strict", total.correct), ("lenient", total.correct_lenient)):
        counts = " ".join(f"{t}={correct[t]}/{total.extracted[t]}" for t in TYPES)
        print(f"  {label} correct/extracted: {counts}")
    print("  strict matched/gold: " + " ".join(f"{t}={s.hit[t]}/{s.total[t]}" for t in TYPES))
    print(f"  high-importance recall (strict): {_pct(s.hit['high'], s.total['high']).strip()}%")
    print(f"  matched rows with all gold facts: {total.facts[0]}/{total.facts[1]}")
    print(f"Malformed names: {len(total.malformed)}")
    print(
        f"Wrong values (metric value not among its gold row's numbers): {len(total.contradicting)}"
    )
    print(f"Targets stored as values: {len(total.targets_as_values)}")
    print(f"Time: {total.seconds * 1000 / max(total.sessions, 1):.1f} ms/session")
    if args.bad:
        for line in total.malformed + total.contradicting + total.targets_as_values:
            print(f"  {line}")


if __name__ == "__main__":
    asyncio.run(main())
