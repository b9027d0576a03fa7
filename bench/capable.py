"""Replay the dev set through the local host on a capable model's recorded replies, and print
what the memory holds by meaning (bench/capable_scoring.py), what grounding refused and why,
and what each session cost.

It starts ../shared/eval/capable-model/replay.py, a meter in front of it (bench/llm_meter.py)
and a host on fresh state pointed at the meter, then replays each scenario as
../shared/eval/README.md says (sessions in order on their dates, then the probes' context with
limit 20). Paths (`--extractor`):
- `openai` (default): the `openai` extractor on `LLM_BASE_URL` (the meter), as any
  OpenAI-compatible deployment runs;
- `workers-ai`: the `workers-ai` extractor on production's model id (`AI_MODEL`, default
  `@cf/zai-org/glm-4.7-flash`), its binding answered by the host from the meter
  (`--text-upstream`, local/upstream_llm.mjs) in Workers AI's reply shape for that model;
- `rules`: the rules extractor (no model).
`--model-url URL` puts another OpenAI-compatible server (relay.py for a live run; give the host
a long timeout with `--var AI_TIMEOUT_S=2400 --var LLM_TIMEOUT_S=2400`) behind the meter
instead of the replay; `--only SLUG` replays some scenarios. `--url URL` uses a host already
running (started with ALLOW_CLOCK_OVERRIDE=1); nothing is started and tokens are what the host
reports. `--judge-dir DIR` writes one JUDGE.md file per scenario (bench/judge_export.py);
`--json FILE` every figure as JSON.

Cost per session: tokens at the price of Workers AI's default model (`PRICE_*`). Model calls are
the extraction's own count (`counts.modelCalls`). KV reads (get, list) and writes (put, delete)
are every KV call the Worker made during the scenario, read from the local host's
`/__kv-operations` before and after (extraction jobs run in the user's writer, outside any
request, so no response header carries their calls); on a server without that path, the
requests' `X-KV-Operations` headers, which miss the jobs'.

Run: `.venv/bin/python -m bench.capable [--extractor openai|workers-ai|rules] [--judge-dir D]`
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.e2e.hostproc import start_host

from bench.capable_scoring import Figures, figures
from bench.judge_export import write_judge_file
from bench.llm_meter import Meter, start_replay
from bench.replay import EVAL_DIR, ScenarioRun, load_scenarios, replay
from entity_memory.settings import DEFAULT_AI_MODEL

#: Workers AI's price of its default model, @cf/zai-org/glm-4.7-flash, in USD per million
#: tokens: Cloudflare's model page (developers.cloudflare.com/workers-ai/models/glm-4.7-flash/,
#: source cloudflare-docs src/content/workers-ai-models/glm-4.7-flash.json, "price"), read
#: 2026-12-06. Billed as neurons at $0.011 per 1,000 (workers-ai/platform/pricing/).
PRICE_INPUT_PER_M = 0.0605
PRICE_OUTPUT_PER_M = 0.40
#: What the `openai` path calls the recorded model (replay.py answers any name).
RECORDED_MODEL = "recorded"


@dataclass
class SessionCost:
    scenario: str
    session_id: str
    extractor: str | None
    degraded: bool
    model_calls: int
    candidates: int
    rejected: list[dict[str, Any]]
    input_tokens: int
    output_tokens: int

    @property
    def cost_usd(self) -> float:
        return (
            self.input_tokens * PRICE_INPUT_PER_M + self.output_tokens * PRICE_OUTPUT_PER_M
        ) / 1e6

    @property
    def grounding(self) -> list[dict[str, Any]]:
        """Rejections by grounding (they carry a code); the rest are schema/parse refusals."""
        return [r for r in self.rejected if r.get("code")]


@dataclass
class ScenarioResult:
    run: ScenarioRun
    sessions: list[SessionCost]
    figures: Figures
    kv_reads: int
    kv_writes: int


def _host_args(extractor: str, model_url: str | None, extra_vars: list[str]) -> list[str]:
    variables = ["ALLOW_CLOCK_OVERRIDE=1", f"EXTRACTOR={extractor}"]
    args: list[str] = []
    if extractor == "openai" and model_url:
        variables += [f"LLM_BASE_URL={model_url}", f"LLM_MODEL={RECORDED_MODEL}"]
    if extractor == "workers-ai" and model_url:
        args += ["--text-upstream", model_url]
        variables.append(f"AI_MODEL={DEFAULT_AI_MODEL}")
    for pair in [*variables, *extra_vars]:
        args += ["--var", pair]
    return args


@contextmanager
def service(args: argparse.Namespace) -> Iterator[tuple[str, Meter | None]]:
    """(base URL of the host, the meter or None): what --url names, or all started here."""
    if args.url:
        yield args.url, None
        return
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="capable-bench-")))
        meter = None
        if args.extractor != "rules":
            model = args.model_url or stack.enter_context(start_replay(work, args.replies))
            meter = stack.enter_context(Meter(model).running())
        host_args = _host_args(args.extractor, meter and meter.url, args.var)
        host = stack.enter_context(start_host(work / "state" / "v3", host_args))
        yield host.base_url, meter


def _session_cost(
    scenario: str, response: dict[str, Any], meter: Meter | None, sid: str
) -> SessionCost:
    counts = response.get("counts") or {}
    usage = response.get("usage") or {}
    calls = meter.take() if meter else []
    return SessionCost(
        scenario=scenario,
        session_id=sid,
        extractor=response.get("extractor"),
        degraded=bool(response.get("degraded")),
        model_calls=int(counts.get("modelCalls", 0)),
        candidates=int(counts.get("candidates", 0)),
        rejected=list(response.get("rejected") or []),
        input_tokens=sum(c.input_tokens for c in calls) if meter else usage.get("input_tokens", 0),
        output_tokens=sum(c.output_tokens for c in calls)
        if meter
        else usage.get("output_tokens", 0),
    )


def _kv_calls(client: httpx.Client) -> dict[str, int] | None:
    """The local host's KV calls since start, by method; None from another server."""
    r = client.get("/__kv-operations")
    return r.json() if r.status_code == 200 else None


def run_scenario(
    client: httpx.Client, scenario: dict[str, Any], meter: Meter | None, extractor: str
) -> ScenarioResult:
    sessions: list[SessionCost] = []
    if meter:
        meter.take()

    def note(session: dict[str, Any], response: dict[str, Any]) -> None:
        sessions.append(_session_cost(scenario["scenario"], response, meter, session["session_id"]))

    before = _kv_calls(client)
    run = replay(client, scenario, extractor, on_session=note)
    after = _kv_calls(client)
    contexts = [p["context"] for p in run.probes]
    reads, writes = run.ops.kv_reads, run.ops.kv_writes
    if before is not None and after is not None:
        used = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        reads = used.get("get", 0) + used.get("list", 0)
        writes = used.get("put", 0) + used.get("delete", 0)
    return ScenarioResult(run, sessions, figures(scenario, run.stored, contexts), reads, writes)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _totals(sessions: list[SessionCost]) -> dict[str, Any]:
    n = len(sessions) or 1
    return {
        "sessions": len(sessions),
        "degraded": sum(s.degraded for s in sessions),
        "model_calls": sum(s.model_calls for s in sessions),
        "candidates": sum(s.candidates for s in sessions),
        "rejected": sum(len(s.rejected) for s in sessions),
        "grounding_rejected": sum(len(s.grounding) for s in sessions),
        "input_tokens_per_session": sum(s.input_tokens for s in sessions) / n,
        "output_tokens_per_session": sum(s.output_tokens for s in sessions) / n,
        "cost_usd_per_session": sum(s.cost_usd for s in sessions) / n,
    }


def summary(
    result_name: str, fig: Figures, sessions: list[SessionCost], kv: tuple[int, int]
) -> dict[str, Any]:
    return {
        "scenario": result_name,
        **fig.summary(),
        **_totals(sessions),
        "kv_reads": kv[0],
        "kv_writes": kv[1],
    }


COLUMNS = [
    ("scenario", "scenario"),
    ("facts.cur", "facts_current"),
    ("attr.cur", "attributed_current"),
    ("chg.cur", "changed_current"),
    ("dup/real", "duplicates_per_real"),
    ("dup.rows", "dup_rows"),
    ("unattr", "unattributed"),
    ("stored/real", "stored_per_real"),
    ("unmatched", "unmatched"),
    ("ctx.in", "context_contains"),
    ("ctx.ex", "context_excludes"),
    ("ctx.in/probe", "context_contains_probe_mean"),
    ("cand", "candidates"),
    ("rej", "rejected"),
    ("grnd.rej", "grounding_rejected"),
    ("llm", "model_calls"),
    ("tok.in/s", "input_tokens_per_session"),
    ("tok.out/s", "output_tokens_per_session"),
    ("$/session", "cost_usd_per_session"),
    ("kv.r", "kv_reads"),
    ("kv.w", "kv_writes"),
]


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "cost_usd_per_session":
        return f"{value:.6f}"
    if key.endswith("tokens_per_session"):
        return f"{value:.0f}"
    return _pct(value) if isinstance(value, float) else str(value)


def print_report(results: list[ScenarioResult], rows: list[dict[str, Any]], detail: bool) -> None:
    print("per session: tokens in (estimated from the request) / out, model calls, cost")
    for r in results:
        for s in r.sessions:
            flag = " DEGRADED" if s.degraded else ""
            print(
                f"  {s.scenario}/{s.session_id} [{s.extractor}] calls={s.model_calls} "
                f"in={s.input_tokens} out={s.output_tokens} ${s.cost_usd:.6f} "
                f"candidates={s.candidates} rejected={len(s.rejected)}{flag}"
            )
    print()
    print(" | ".join(name for name, _ in COLUMNS))
    for row in rows:
        print(" | ".join(_cell(key, row.get(key)) for _, key in COLUMNS))
    print("\nevery rejection, with its reason:")
    for r in results:
        for s in r.sessions:
            for rej in s.rejected:
                item = rej.get("item") or {}
                where = f"{s.scenario}/{s.session_id}"
                what = f"{item.get('type', '?')} {str(item.get('name', ''))[:60]!r}"
                print(f"  {where} {rej.get('code') or 'schema'}: {what}: {rej.get('reason')}")
    if not detail:
        return
    for r in results:
        print(f"\n{r.run.scenario['scenario']}:")
        for d in r.figures.detail:
            mark = "ok " if d["current"] else "-- "
            dup = f" x{len(d['entities'])}" if len(d["entities"]) > 1 else ""
            print(f"  {mark}{d['type']} {d['row']!r} <- {d['entities']}{dup}")
        for name in r.figures.unmatched_names:
            print(f"  ?? unmatched {name}")
        for line in missing_strings(r.run.scenario, r.run.stored, r.run.probes):
            print(f"  {line}")


def _text(entity: dict[str, Any]) -> str:
    parts = [entity.get("name"), *(entity.get("aliases") or []), entity.get("content")]
    return (" ".join(str(p) for p in parts if p) + " " + json.dumps(entity.get("metadata"))).lower()


def missing_strings(
    scenario: dict[str, Any], stored: list[dict[str, Any]], probes: list[dict[str, Any]]
) -> list[str]:
    """Each probe string the context lacks, and why: not stored (in no entity's name, content
    or metadata), stored but not selected (no entity holding it is among the probe's), or
    selected and not rendered (the block leaves it out)."""
    lines: list[str] = []
    for probe, got in zip(scenario["probes"], probes, strict=True):
        block = str(got.get("context", "")).lower()
        chosen = {(e.get("type"), e.get("id")) for e in got.get("entities", [])}
        for wanted in probe.get("expect_context_contains", []):
            if wanted.lower() in block:
                continue
            holders = [e for e in stored if wanted.lower() in _text(e)]
            if not holders:
                why = "not stored"
            elif not any((e.get("type"), e.get("id")) in chosen for e in holders):
                why = f"not selected (in {[e.get('name') for e in holders][:3]})"
            else:
                why = "selected, not rendered"
            lines.append(f"!! probe {probe['task'][:50]!r} lacks {wanted!r}: {why}")
            if why.startswith("not selected"):
                names = [f"{e.get('type')}:{e.get('name')}" for e in got.get("entities", [])]
                lines.append(f"   selected ({len(names)}): {names}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extractor", default="openai", choices=["openai", "workers-ai", "rules"])
    parser.add_argument("--url", help="a host already running (ALLOW_CLOCK_OVERRIDE=1)")
    parser.add_argument("--dir", type=Path, default=EVAL_DIR, help="the scenarios")
    parser.add_argument("--replies", type=Path, help="recorded replies (replay.py's default)")
    parser.add_argument(
        "--model-url", help="another OpenAI-compatible /v1 server instead of the replay (relay.py)"
    )
    parser.add_argument("--only", action="append", help="a scenario's slug (repeatable)")
    parser.add_argument("--var", action="append", default=[], help="NAME=VALUE for the host")
    parser.add_argument("--judge-dir", type=Path, help="write one JUDGE.md file per scenario")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--detail", action="store_true", help="rows, attributions, unmatched")
    args = parser.parse_args()
    scenarios = [s for s in load_scenarios(args.dir) if not args.only or s["scenario"] in args.only]
    results: list[ScenarioResult] = []
    with (
        service(args) as (base_url, meter),
        httpx.Client(base_url=base_url, timeout=3600) as client,
    ):
        for scenario in scenarios:
            results.append(run_scenario(client, scenario, meter, args.extractor))
    rows = [
        summary(
            r.run.scenario["scenario"],
            r.figures,
            r.sessions,
            (r.kv_reads, r.kv_writes),
        )
        for r in results
    ]
    pooled = Figures()
    for r in results:
        pooled.add(r.figures)
    every = [s for r in results for s in r.sessions]
    kv = (sum(r["kv_reads"] for r in rows), sum(r["kv_writes"] for r in rows))
    rows.append(summary("OVERALL (pooled)", pooled, every, kv))
    print_report(results, rows, args.detail)
    if args.judge_dir:
        for r in results:
            write_judge_file(args.judge_dir, r.run.scenario, r.run.stored)
        print(f"\njudge files: {args.judge_dir}")
    if args.json:
        args.json.write_text(json.dumps({"extractor": args.extractor, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
