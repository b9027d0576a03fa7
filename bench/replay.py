"""Replay an evaluation scenario through the HTTP API and score it (shared/eval/README.md).

Per scenario, in an empty user: extract each session in order with the session's date as the
clock (`X-Entity-Memory-Now`, honoured when the service runs with ALLOW_CLOCK_OVERRIDE), then
export the stored entities and ledger, then run each probe's context request (limit 20) at the
probe's date. Works against any base URL (the local host, a deployed Worker) or an in-process
ASGI app, through an httpx client.

Run: `.venv/bin/python -m bench.replay [--url URL] [--extractor rules|workers-ai|openai]`
(without --url it runs the app in process on in-memory KV and SQLite D1; with --url, a host or
a deployed Worker started with `ALLOW_CLOCK_OVERRIDE=1`). In process, `--llm-base-url URL`
(plus `--llm-model`, `--llm-context-tokens`, `--llm-max-tokens`, `--llm-temperature`; the key
from the LLM_API_KEY environment variable) points the `openai` extractor at any
OpenAI-compatible server: Ollama (http://127.0.0.1:11434/v1), llama.cpp's llama-server
(http://127.0.0.1:8080/v1), vLLM (http://127.0.0.1:8000/v1). Sessions an LLM failed on are
counted as degraded at the end: their figures understate the extractor. `--judge-dir DIR` writes
each scenario's final memory in the shape JUDGE.md reads (bench/judge_export.py).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import eval_scoring as score
from bench.judge_export import write_judge_file
from entity_memory.http.deps import CLOCK_HEADER

ROOT = Path(__file__).resolve().parent.parent

EVAL_DIR = ROOT.parent / "shared" / "eval" / "dev"
#: Seconds between two looks at a job that outlived the extract request's wait.
JOB_POLL_S = 5.0


@dataclass
class Ops:
    kv: dict[str, int] = field(default_factory=dict)
    d1_statements: int = 0
    d1_calls: int = 0

    def add(self, response: httpx.Response) -> None:
        for part in response.headers.get("x-kv-operations", "").split(","):
            if "=" in part:
                name, n = part.split("=")
                self.kv[name] = self.kv.get(name, 0) + int(n)
        d1 = dict(
            p.split("=") for p in response.headers.get("x-d1-statements", "").split(",") if "=" in p
        )
        self.d1_calls += int(d1.get("calls", 0))
        self.d1_statements += int(d1.get("statements", 0))

    @property
    def kv_reads(self) -> int:
        return sum(v for k, v in self.kv.items() if k.startswith("get") or k == "list")

    @property
    def kv_writes(self) -> int:
        return self.kv.get("put", 0) + self.kv.get("delete", 0)


@dataclass
class ScenarioRun:
    scenario: dict[str, Any]
    user: str
    extracted: list[list[dict[str, Any]]]  # per session, the entities the extraction stored
    responses: list[dict[str, Any]]
    stored: list[dict[str, Any]]
    history: list[dict[str, Any]]
    probes: list[dict[str, Any]]  # {"entities", "context"} per probe
    ops: Ops
    llm_calls: int


def _check(response: httpx.Response) -> dict[str, Any]:
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text}")
    return response.json()


def _finished(client: httpx.Client, response: httpx.Response, ops: Ops) -> httpx.Response:
    """A job still running after the wait (a live model answered by hand, through relay.py,
    takes minutes) is polled until it ends; its answer then has the shape a 200 has."""
    while response.status_code == 202:
        url = response.json()["statusUrl"]
        time.sleep(JOB_POLL_S)
        status = client.get(url)
        ops.add(status)
        job = _check(status)
        if job["state"] == "done":
            summary = {k: v for k, v in job.items() if k != "result"}
            return httpx.Response(200, json={**job["result"], "job": summary})
        if job["state"] == "failed":
            raise RuntimeError(f"{url}: failed {job.get('error')}")
    return response


def replay(
    client: httpx.Client,
    scenario: dict[str, Any],
    extractor: str | None = None,
    user: str | None = None,
    on_session: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
) -> ScenarioRun:
    """`on_session(session, response)` is called after each session's extraction (a bench
    reads what that session cost there)."""
    user = user or f"{scenario['user_id']}-{uuid.uuid4().hex[:8]}"
    ops = Ops()
    extracted, responses = [], []
    llm_calls = 0
    for session in scenario["sessions"]:
        body: dict[str, Any] = {"messages": session["messages"]}
        if extractor:
            body["extractor"] = extractor
        r = client.post(
            f"/v1/users/{user}/sessions/{session['session_id']}/extract",
            params={"wait": "300"},  # the longest wait: a model's session takes a minute
            json=body,
            headers={CLOCK_HEADER: session["date"]},
        )
        ops.add(r)
        result = _check(_finished(client, r, ops))
        responses.append(result)
        if result.get("extractor") not in (None, "rules"):
            llm_calls += 1
        extracted.append(result["entities"])
        if on_session is not None:
            on_session(session, result)
    r = client.get(f"/v1/users/{user}/export")
    ops.add(r)
    export = _check(r)
    probes = []
    for probe in scenario["probes"]:
        r = client.post(
            f"/v1/users/{user}/context",
            json={"task": probe["task"], "limit": 20},
            headers={CLOCK_HEADER: probe["date"]},
        )
        ops.add(r)
        probes.append(_check(r))
    return ScenarioRun(
        scenario,
        user,
        extracted,
        responses,
        export["entities"],
        export["history"],
        probes,
        ops,
        llm_calls,
    )


def evaluate(run: ScenarioRun) -> dict[str, Any]:
    """The README's figures for one replayed scenario."""
    sc = run.scenario
    tally = score.Tally()
    fps = 0
    for session, ents in zip(sc["sessions"], run.extracted, strict=True):
        tally.merge(score.recall(ents, session["expect_entities"]))
        fps += len(score.false_positives(ents, session["expect_entities"]))
    final = sc["expect_final"]
    dup = score.duplicates(run.stored, final)
    changed = score.changed_current(run.stored, final)
    versions = {(h["type"], h["id"]): h for h in run.history}
    tracked = sum(
        1
        for row in changed["rows"]
        if any(e.get("version", 1) > 1 and (e["type"], e["id"]) in versions for e in row["ents"])
    )
    hit10 = [
        score.hit_at_k(p["entities"], pr["expect_top"], 10, final)
        for p, pr in zip(run.probes, sc["probes"], strict=True)
    ]
    hit20 = [
        score.hit_at_k(p["entities"], pr["expect_top"], 20, final)
        for p, pr in zip(run.probes, sc["probes"], strict=True)
    ]
    contains = [
        score.context_contains(p["context"], pr.get("expect_context_contains", []))
        for p, pr in zip(run.probes, sc["probes"], strict=True)
    ]
    excludes = [
        score.context_excludes(p["context"], pr.get("expect_context_excludes", []))
        for p, pr in zip(run.probes, sc["probes"], strict=True)
    ]
    stored_fp = len(score.false_positives(run.stored, final))

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 1.0

    return {
        "scenario": sc["scenario"],
        "recall": {t: tally.rate(t) for t in (*score.TYPES, "overall", "high")},
        "duplicates_mean": dup["mean"],
        "exactly_one": dup["exactly_one"],
        "lost": dup["lost"],
        "changed_current": changed["rate"],
        "changed_n": changed["n"],
        "changed_tracked": tracked,
        "hit10": mean(hit10),
        "hit20": mean(hit20),
        "context_contains": mean(contains),
        "context_excludes": mean(excludes),
        "fp_extracted": fps,
        "fp_stored": stored_fp,
        "kv_reads": run.ops.kv_reads,
        "kv_writes": run.ops.kv_writes,
        "d1_statements": run.ops.d1_statements,
        "llm_calls": run.llm_calls,
    }


def load_scenarios(directory: Path = EVAL_DIR) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = [
        "scenario",
        "rec.all",
        "rec.high",
        "campaign",
        "metric",
        "decision",
        "pain_pt",
        "pref",
        "dup.mean",
        "exact1",
        "lost",
        "chg.cur",
        "chg.trk",
        "hit@10",
        "hit@20",
        "ctx.in",
        "ctx.ex",
        "fp.ext",
        "fp.sto",
        "kv.r",
        "kv.w",
        "d1.st",
        "llm",
    ]
    print(" | ".join(cols))
    for r in rows:
        rec = r["recall"]
        cells = [
            r["scenario"],
            rec["overall"],
            rec["high"],
            rec["campaign"],
            rec["metric"],
            rec["decision"],
            rec["pain_point"],
            rec["preference"],
            r["duplicates_mean"],
            r["exactly_one"],
            r["lost"],
            r["changed_current"],
            f"{r['changed_tracked']}/{r['changed_n']}",
            r["hit10"],
            r["hit20"],
            r["context_contains"],
            r["context_excludes"],
            r["fp_extracted"],
            r["fp_stored"],
            r["kv_reads"],
            r["kv_writes"],
            r["d1_statements"],
            r["llm_calls"],
        ]
        print(" | ".join(_fmt(c) for c in cells))


def overall(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over scenarios of the rates, sums of the counts."""

    def avg(key: str) -> float | None:
        vals = [r[key] for r in rows if r[key] is not None]
        return sum(vals) / len(vals) if vals else None

    out: dict[str, Any] = {"scenario": "OVERALL (mean)"}
    out["recall"] = {
        t: (sum(v for v in vals) / len(vals) if vals else None)
        for t in rows[0]["recall"]
        for vals in [[r["recall"][t] for r in rows if r["recall"][t] is not None]]
    }
    for key in (
        "duplicates_mean",
        "exactly_one",
        "lost",
        "changed_current",
        "hit10",
        "hit20",
        "context_contains",
        "context_excludes",
    ):
        out[key] = avg(key)
    for key in (
        "changed_tracked",
        "changed_n",
        "fp_extracted",
        "fp_stored",
        "kv_reads",
        "kv_writes",
        "d1_statements",
        "llm_calls",
    ):
        out[key] = sum(r[key] for r in rows)
    return out


async def _httpx_post(
    url: str, headers: Any, body: bytes, timeout_s: float
) -> tuple[int, str, dict[str, str]]:
    """The `HttpPost` of the in-process app (the Worker uses its `fetch`)."""
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        response = await client.post(url, headers=dict(headers), content=body)
        return response.status_code, response.text, dict(response.headers)


def in_process_client(llm_vars: dict[str, str] | None = None) -> httpx.Client:
    """The app on CPython with in-memory KV and SQLite D1 (the same core the Worker runs);
    `llm_vars` (LLM_BASE_URL, LLM_MODEL, ...) configure the `openai` extractor."""
    import asyncio
    import threading

    from entity_memory.http.app import create_app
    from entity_memory.service.bindings import Bindings
    from entity_memory.settings import Settings
    from entity_memory.storage.d1 import SQLiteD1
    from entity_memory.storage.kv import InMemoryKV

    kv = InMemoryKV()
    db = SQLiteD1(migrations=ROOT / "migrations")
    bindings = Bindings(
        kv=kv,
        db=db,
        settings=Settings(allow_clock_override=True),
        http_post=_httpx_post,
        vars=dict(llm_vars or {}),
    )
    app = create_app(lambda env: bindings)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    transport = httpx.ASGITransport(app=app)

    class SyncBridge(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            async def go() -> httpx.Response:
                request.stream = httpx.ByteStream(request.read())
                response = await transport.handle_async_request(request)
                body = await response.aread()
                return httpx.Response(response.status_code, headers=response.headers, content=body)

            return asyncio.run_coroutine_threadsafe(go(), loop).result()

    return httpx.Client(transport=SyncBridge(), base_url="http://in-process")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running service (with ALLOW_CLOCK_OVERRIDE=1)")
    parser.add_argument("--extractor", default="rules", help="rules | workers-ai | openai")
    parser.add_argument("--dir", type=Path, default=EVAL_DIR)
    parser.add_argument("--llm-base-url", help="in process: an OpenAI-compatible /v1 URL")
    parser.add_argument("--llm-model", help="in process: the model name the server expects")
    parser.add_argument("--llm-context-tokens", help="in process: the model's context window")
    parser.add_argument("--llm-max-tokens", help="in process: output tokens per call")
    parser.add_argument("--llm-temperature", help="in process: omit for reasoning models")
    parser.add_argument(
        "--judge-dir", type=Path, help="write each scenario's final memory as a JUDGE.md file"
    )
    args = parser.parse_args()
    llm_vars = {
        name: value
        for name, value in {
            "LLM_BASE_URL": args.llm_base_url,
            "LLM_MODEL": args.llm_model,
            "LLM_CONTEXT_TOKENS": args.llm_context_tokens,
            "LLM_MAX_TOKENS": args.llm_max_tokens,
            "LLM_TEMPERATURE": args.llm_temperature,
            "LLM_API_KEY": os.environ.get("LLM_API_KEY"),
        }.items()
        if value
    }
    if args.url:
        client = httpx.Client(base_url=args.url, timeout=900)
    else:
        client = in_process_client(llm_vars)
    runs = [replay(client, sc, args.extractor) for sc in load_scenarios(args.dir)]
    rows = [evaluate(run) for run in runs]
    print_table([*rows, overall(rows)])
    if args.judge_dir:
        for run in runs:
            write_judge_file(args.judge_dir, run.scenario, run.stored)
        print(f"\njudge files (final stored entities): {args.judge_dir}/<scenario>.json")
    degraded = [r for run in runs for r in run.responses if r.get("degraded")]
    if degraded:
        print(f"\n{len(degraded)} session(s) degraded (LLM failed, pending):")
        for response in degraded[:10]:
            print(f"  - {response.get('degradedReason')}")


if __name__ == "__main__":
    main()
