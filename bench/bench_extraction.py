"""Benchmark: extraction recall of the offline rules extractor on the dev evaluation set.

For every scenario in ../shared/eval/dev, sessions are extracted in order; the entities from
earlier sessions are passed as `known` (names and aliases merged by slug, as the store would
hold them), so later sessions can reuse stored names. Scored per the eval README:
rule 1 (recall per type, overall, importance-high; strict and lenient) and rule 6 (extracted
entities matching no gold row of their session).

Run: `.venv/bin/python bench/bench_extraction.py [--dev DIR] [--misses] [--fp]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from bench.eval_scoring import (  # noqa: E402
    TYPES,
    Tally,
    assign,
    facts_in_matched,
    false_positives,
    importance_agreement,
    recall,
)
from entity_memory.domain.keys import slug_for  # noqa: E402
from entity_memory.extraction.base import KnownEntity, Message  # noqa: E402
from entity_memory.extraction.rules.legacy import RulesExtractor  # noqa: E402

DEV = ROOT.parent / "shared" / "eval" / "dev"
COLUMNS = [*TYPES, "overall", "high"]


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


async def run_scenario(path: Path, show_misses: bool, show_fp: bool) -> dict[str, Any]:
    data = json.loads(path.read_text())
    extractor = RulesExtractor()
    known: dict[tuple[str, str], KnownEntity] = {}
    strict, lenient = Tally(), Tally()
    fps = 0
    n_extracted = 0
    imp_agree = imp_total = 0
    facts_ok = facts_total = 0
    elapsed = 0.0
    for session in data["sessions"]:
        messages = [Message(role=m["role"], content=m["content"]) for m in session["messages"]]
        t0 = time.perf_counter()
        result = await extractor.extract(messages, list(known.values()), _ms(session["date"]))
        elapsed += time.perf_counter() - t0
        cands = result.candidates
        rows = session["expect_entities"]
        strict.merge(recall(cands, rows))
        lenient.merge(recall(cands, rows, lenient=True))
        agree, compared = importance_agreement(cands, rows)
        imp_agree, imp_total = imp_agree + agree, imp_total + compared
        ok, matched = facts_in_matched(cands, rows)
        facts_ok, facts_total = facts_ok + ok, facts_total + matched
        fp = false_positives(cands, rows)
        fps += len(fp)
        n_extracted += len(cands)
        if show_misses:
            got = set(assign(cands, rows))
            for i, row in enumerate(rows):
                if i not in got:
                    print(
                        f"  MISS {path.stem}/{session['session_id']} {row['type']}: {row['name']}"
                        f" {row.get('aliases')}"
                    )
        if show_fp:
            for c in fp:
                print(f"  FP   {path.stem}/{session['session_id']} {c['type']}: {c['name']}")
        _remember(known, cands)
    return {
        "scenario": data["scenario"],
        "strict": strict,
        "lenient": lenient,
        "fp": fps,
        "extracted": n_extracted,
        "sessions": len(data["sessions"]),
        "seconds": elapsed,
        "imp": (imp_agree, imp_total),
        "facts": (facts_ok, facts_total),
    }


def _fmt(t: Tally, key: str) -> str:
    r = t.rate(key)
    return "   -   " if r is None else f"{r * 100:5.1f}% "


def print_table(results: list[dict[str, Any]], variant: str) -> None:
    head = f"{'scenario (' + variant + ')':34}" + "".join(f"{c[:10]:>11}" for c in COLUMNS)
    print(head + f"{'FP':>6}{'extr':>6}{'ms/sess':>9}")
    print("-" * len(head) + "-" * 21)
    total = Tally()
    fp = ext = sessions = 0
    secs = 0.0
    for r in results:
        t = r[variant]
        total.merge(t)
        fp, ext, sessions, secs = (
            fp + r["fp"],
            ext + r["extracted"],
            sessions + r["sessions"],
            secs + r["seconds"],
        )
        cells = "".join(f"{_fmt(t, c):>11}" for c in COLUMNS)
        ms = r["seconds"] * 1000 / r["sessions"]
        print(f"{r['scenario']:34}{cells}{r['fp']:>6}{r['extracted']:>6}{ms:>9.1f}")
    cells = "".join(f"{_fmt(total, c):>11}" for c in COLUMNS)
    print(f"{'OVERALL':34}{cells}{fp:>6}{ext:>6}{secs * 1000 / max(sessions, 1):>9.1f}")
    counts = " ".join(f"{c}={total.hit[c]}/{total.total[c]}" for c in COLUMNS)
    print(f"  matched/gold: {counts}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument("--misses", action="store_true", help="list gold rows not matched")
    parser.add_argument("--fp", action="store_true", help="list possible false positives")
    args = parser.parse_args()
    results = [await run_scenario(p, args.misses, args.fp) for p in sorted(args.dev.glob("*.json"))]
    print("\nRule 1 recall (strict: name or gold alias), rule 6 possible false positives (FP)")
    print_table(results, "strict")
    print("\nRule 1 recall, lenient (also the entity's own aliases, or all facts in its content)")
    print_table(results, "lenient")
    agree = sum(r["imp"][0] for r in results)
    total = sum(r["imp"][1] for r in results)
    fok = sum(r["facts"][0] for r in results)
    ftot = sum(r["facts"][1] for r in results)
    print(
        f"\nMatched rows whose facts all appear in the entity's content/metadata: "
        f"{fok}/{ftot} = {fok / max(ftot, 1) * 100:.1f}%"
    )
    print(
        f"Importance band agreement on matched rows (>=0.85 high, 0.5-0.85 medium, <0.5 low): "
        f"{agree}/{total} = {agree / max(total, 1) * 100:.1f}%"
    )


if __name__ == "__main__":
    asyncio.run(main())
