"""Benchmark: the extractors on the dev evaluation set, recall and precision per type.

Each extractor named with `--extractor` runs every scenario of ../shared/eval/dev: `rules`
(offline), or `openai:<design>` (the OpenAI-compatible client against `--llm-base-url`, by
default the local llama-server on :8099) with a design of extraction/llm/typed.py (`single`,
`typed`, `confirm`, `union`). What is scored is what the pipeline would store: candidates
after schema validation and the grounding checks (extraction/grounding.py); the rejections
are counted by reason.

For every scenario, sessions are extracted in order; the entities from
earlier sessions are passed as `known` (names and aliases merged by slug, as the store would
hold them), so later sessions can reuse stored names. Scored per the eval README (rule 1,
strict and lenient) plus:

- precision per type: the share of extracted entities of a type that match a gold row of their
  session (strict matching; rule 6's "possible false positives" are the rest);
- malformed names (bench/quality.py): ending on a function word, containing "is", cut mid-phrase;
- wrong values: a metric value that is not among the numbers of its matched gold row's facts,
  and a value the session states as a target.

Per session it also records seconds (wall clock: on a shared machine they vary with load),
prompt and completion tokens (they do not), model calls, replies cut off and chunks failed.

The figures are reported, not asserted. Run from the repository root:
`.venv/bin/python -m bench.bench_extraction [--extractor rules --extractor openai:typed]
[--scenario SUBSTR] [--sessions N] [--dev DIR] [--misses] [--fp] [--bad]`
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
from entity_memory.extraction.base import ExtractionResult, KnownEntity, Message
from entity_memory.extraction.grounding import ground, session_context
from entity_memory.extraction.rules import RulesExtractor
from entity_memory.extraction.validate import validate_candidates

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT.parent / "shared" / "eval" / "dev"
LOCAL_LLM = "http://127.0.0.1:8099/v1"


async def _httpx_post(
    url: str, headers: Any, body: bytes, timeout_s: float
) -> tuple[int, str, dict[str, str]]:
    import httpx

    async with httpx.AsyncClient(timeout=timeout_s) as client:
        response = await client.post(url, headers=dict(headers), content=body)
        return response.status_code, response.text, dict(response.headers)


def build(name: str, base_url: str, timeout_s: float) -> Any:
    """`rules` or `openai:<design>[:<kind>+<kind>...]` (the kinds a typed design asks for)."""
    if name == "rules":
        return RulesExtractor()
    backend, _, rest = name.partition(":")
    design, _, kinds = rest.partition(":")
    if backend != "openai":
        raise SystemExit(f"unknown extractor {name!r}")
    from entity_memory.extraction.llm.openai_compat import OpenAICompatExtractor

    return OpenAICompatExtractor(
        _httpx_post,
        base_url=base_url,
        timeout_s=timeout_s,
        max_tokens=1200,
        temperature=0.0,
        context_tokens=8192,
        attempts=2,
        design=design or "typed",  # type: ignore[arg-type]
        passes=kinds.split("+") if kinds else None,
    )


def stored(
    result: ExtractionResult, messages: list[Message], known: list[KnownEntity]
) -> tuple[list[dict[str, Any]], list[str]]:
    """What the pipeline would store of `result` (validated, grounded) and why the rest not."""
    inputs, invalid = validate_candidates(result.candidates)
    grounded = ground(inputs, session_context(messages, known))
    reasons = ["not_an_item" for _ in result.rejected] + ["invalid" for _ in invalid]
    reasons += [r.code for r in grounded.rejected]
    reasons += [f"dropped:{d.code}" for d in grounded.dropped]
    return [k.to_json_dict() for k in grounded.kept], reasons


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
    max_seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    truncated: int = 0
    failures: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: defaultdict(int))

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
        self.max_seconds = max(self.max_seconds, other.max_seconds)
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.calls += other.calls
        self.truncated += other.truncated
        self.failures += other.failures
        for k, v in other.rejected.items():
            self.rejected[k] += v


def _account(fig: Figures, result: ExtractionResult, seconds: float) -> None:
    fig.seconds += seconds
    fig.max_seconds = max(fig.max_seconds, seconds)
    fig.sessions += 1
    if result.usage is not None:
        fig.input_tokens += result.usage.input_tokens
        fig.output_tokens += result.usage.output_tokens
    fig.calls += result.calls
    fig.truncated += result.truncated
    fig.failures += len(result.failures)


async def run_scenario(
    path: Path, show: set[str], extractor: Any, max_sessions: int | None = None
) -> tuple[str, Figures]:
    data = json.loads(path.read_text())
    known: dict[tuple[str, str], KnownEntity] = {}
    fig = Figures()
    for session in data["sessions"][:max_sessions]:
        messages = [Message(role=m["role"], content=m["content"]) for m in session["messages"]]
        t0 = time.perf_counter()
        result = await extractor.extract(messages, list(known.values()), _ms(session["date"]))
        seconds = time.perf_counter() - t0
        _account(fig, result, seconds)
        cands, reasons = stored(result, messages, list(known.values()))
        for reason in reasons:
            fig.rejected[reason] += 1
        rows = session["expect_entities"]
        if "progress" in show:
            print(
                f"  {path.stem}/{session['session_id']}: {seconds:.1f} s, {len(cands)} kept,"
                f" {len(reasons)} rejected, {result.calls} calls",
                flush=True,
            )
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
    parser.add_argument("--extractor", action="append", help="rules | openai:<design>")
    parser.add_argument("--llm-base-url", default=LOCAL_LLM)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per model call")
    parser.add_argument("--scenario", default="", help="only scenarios whose file has this")
    parser.add_argument("--sessions", type=int, default=None, help="at most N per scenario")
    parser.add_argument("--progress", action="store_true", help="a line per session")
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument("--misses", action="store_true", help="list gold rows not matched")
    parser.add_argument("--fp", action="store_true", help="list extracted entities matching none")
    parser.add_argument("--bad", action="store_true", help="list malformed names, wrong values")
    args = parser.parse_args()
    show = {k for k in ("misses", "fp", "progress") if getattr(args, k)}
    paths = [p for p in sorted(args.dev.glob("*.json")) if args.scenario in p.stem]
    for name in args.extractor or ["rules"]:
        extractor = build(name, args.llm_base_url, args.timeout)
        results = [await run_scenario(p, show, extractor, args.sessions) for p in paths]
        report(name, results, args.bad)


def report(name: str, results: list[tuple[str, Figures]], bad: bool) -> None:
    print(f"\n=== {name}: recall% / precision% per type (what would be stored)")
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
    n = max(total.sessions, 1)
    print(
        f"Per session ({total.sessions}): {total.seconds / n:.2f} s mean,"
        f" {total.max_seconds:.2f} s max (wall clock, shared machine);"
        f" tokens {total.input_tokens / n:.0f} prompt + {total.output_tokens / n:.0f} completion;"
        f" {total.calls / n:.1f} calls"
    )
    print(f"Replies cut off: {total.truncated}; chunks failed: {total.failures}")
    rejected = ", ".join(f"{k}: {v}" for k, v in sorted(total.rejected.items())) or "none"
    print(f"Rejected before storing: {rejected}")
    if bad:
        for line in total.malformed + total.contradicting + total.targets_as_values:
            print(f"  {line}")


if __name__ == "__main__":
    asyncio.run(main())
