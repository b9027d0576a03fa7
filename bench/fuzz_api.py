"""Fuzz every operation of `/openapi.json` on the real local host with schemathesis.

    .venv/bin/python -m bench.fuzz_api                 # start a host on a temp dir, fuzz, stop
    .venv/bin/python -m bench.fuzz_api --url http://127.0.0.1:8787 --max-examples 20

Positive and negative data for every operation, bounded by `--max-examples` per operation and
mode and by `--time-limit` overall. Checks: no 5xx (`not_a_server_error`) and the response
conforms to its declared schema where one is declared (`response_schema_conformance`). Prints
the operations covered, the cases tried, and each distinct failure with a curl command that
reproduces it. Exit status 1 when a 5xx was found.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import response_schema_conformance
from tests.e2e.hostproc import start_host

REPO = Path(__file__).resolve().parents[1]

CHECKS = [not_a_server_error, response_schema_conformance]
ID_SCHEMA = {"type": "string", "pattern": "^[A-Za-z0-9._@+-]{1,128}$"}
TYPE_SCHEMA = {
    "type": "string",
    "enum": ["campaign", "metric", "decision", "pain_point", "preference"],
}


def documented(raw: dict) -> dict:
    """The schema with the README's id rule and the five types on the path parameters.

    `/openapi.json` declares ids as bare strings, so most generated paths only exercise the
    400 `invalid_id` branch; with the documented constraints positive data reaches the
    handlers and negative data attacks the id rule itself.
    """
    patched = copy.deepcopy(raw)
    for item in patched.get("paths", {}).values():
        for op in item.values():
            for param in op.get("parameters", []) if isinstance(op, dict) else []:
                if param.get("in") != "path":
                    continue
                if param["name"] == "entity_type":
                    param["schema"] = dict(TYPE_SCHEMA)
                elif param["name"].endswith("_id"):
                    param["schema"] = dict(ID_SCHEMA)
    return patched


@dataclass
class Finding:
    operation: str
    mode: str
    check: str
    status: int
    curl: str
    body: str


@dataclass
class Tally:
    cases: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    findings: dict[tuple[str, str, int], Finding] = field(default_factory=dict)
    repeats: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    transport_errors: int = 0
    unsatisfiable: list[str] = field(default_factory=list)
    by_operation: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))


def fuzz_operation(
    op, mode, base_url: str, tally: Tally, args, deadline: float, variant: str
) -> None:
    label = f"{op.method.upper()} {op.path}"

    @settings(
        max_examples=args.max_examples,
        deadline=None,
        database=None,
        derandomize=args.seed is None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=op.as_strategy(generation_mode=mode))
    def run(case) -> None:
        if time.monotonic() > deadline:
            return
        tally.cases[label] += 1
        try:
            response = case.call(base_url=base_url, timeout=30)
        except requests.RequestException:
            tally.transport_errors += 1
            return
        tally.statuses[response.status_code] += 1
        tally.by_operation[label][response.status_code] += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except (FailureGroup, Failure) as exc:
            failures = exc.exceptions if isinstance(exc, FailureGroup) else [exc]
            for failure in failures:
                key = (label, failure.title, response.status_code)
                tally.repeats[key] += 1
                if key not in tally.findings:
                    tally.findings[key] = Finding(
                        label,
                        f"{variant} schema, {mode.value}",
                        failure.title,
                        response.status_code,
                        case.as_curl_command(base_url=base_url),
                        response.text[:300],
                    )

    try:
        run()
    except Unsatisfiable:
        # e.g. negative data for an operation without parameters or body: nothing to break.
        tally.unsatisfiable.append(f"{label} ({variant}, {mode.value})")


@contextmanager
def host_url(args) -> Iterator[str]:
    if args.url:
        yield args.url.rstrip("/")
        return
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp, start_host(Path(tmp) / "v3") as host:
        print(f"host ready on {host.base_url} in {host.startup_ms} ms", flush=True)
        yield host.base_url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="fuzz a running host instead of starting one")
    parser.add_argument("--max-examples", type=int, default=50, help="per operation and mode")
    parser.add_argument("--time-limit", type=float, default=600, help="seconds, overall")
    parser.add_argument("--seed", type=int, default=None, help="random instead of derandomized")
    parser.add_argument("--token", help="bearer token, if the host runs with API_TOKEN")
    args = parser.parse_args()

    started = time.monotonic()
    deadline = started + args.time_limit
    tally = Tally()
    with host_url(args) as base_url:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        raw = requests.get(f"{base_url}/openapi.json", headers=headers, timeout=30).json()
        for variant, doc in (("declared", raw), ("documented", documented(raw))):
            schema = schemathesis.openapi.from_dict(doc)
            operations = [r.ok() for r in schema.get_all_operations()]
            print(f"{variant} schema:", flush=True)
            for op in operations:
                label = f"{op.method.upper()} {op.path}"
                before = tally.cases[label]
                seen = Counter(tally.by_operation[label])
                for mode in (
                    schemathesis.GenerationMode.POSITIVE,
                    schemathesis.GenerationMode.NEGATIVE,
                ):
                    fuzz_operation(op, mode, base_url, tally, args, deadline, variant)
                statuses = tally.by_operation[label] - seen
                codes = " ".join(f"{c}={n}" for c, n in sorted(statuses.items()))
                print(f"  {label}: {tally.cases[label] - before} cases ({codes})", flush=True)
    elapsed = time.monotonic() - started

    covered = sum(1 for op in operations if tally.cases[f"{op.method.upper()} {op.path}"])
    server_errors = [f for f in tally.findings.values() if f.status >= 500]
    print()
    print(f"operations covered: {covered}/{len(operations)}")
    print(f"cases tried: {sum(tally.cases.values())} in {elapsed:.0f} s")
    print("statuses: " + ", ".join(f"{s}={n}" for s, n in sorted(tally.statuses.items())))
    print(f"transport errors: {tally.transport_errors}")
    if tally.unsatisfiable:
        print("no cases possible: " + ", ".join(tally.unsatisfiable))
    print(f"distinct failures: {len(tally.findings)} ({len(server_errors)} with a 5xx)")
    for key, f in sorted(tally.findings.items(), key=lambda kv: (-kv[1].status, kv[0])):
        print(f"\n[{f.status}] {f.operation} ({f.mode}): {f.check} x{tally.repeats[key]}")
        print(f"  reproduce: {f.curl}")
        print(f"  response: {f.body}")
    return 1 if server_errors else 0


if __name__ == "__main__":
    sys.exit(main())
