"""Benchmark: the store's CPU time and memory per request inside Pyodide, without host I/O.

For users holding 1k and 10k entities: a context request (`retrieve_for_context`, limit 20)
and a 20-entity write (10 updates, 10 new), with the KV an in-process JS Map behind the Workers
SDK (bench/pyodide_store.mjs), so the JS->Python conversions are real. Prints CPU ms (median,
min-max) and the wasm memory after imports and after each kind of request (wasm memory never
shrinks, so the figure after a phase is that phase's peak); one fresh Node process per size.
The KV is filled on CPython (fast) and handed over as a JSON dump.

Run: `.venv/bin/python -m bench.bench_pyodide [--sizes 1000,10000] [--repeats 7] [--src DIR]`
(--src: another copy of src/, e.g. a checkout of the previous commit, for a before/after).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.bench_store import fill
from entity_memory.domain.keys import index_key
from entity_memory.storage.kv import InMemoryKV
from entity_memory.storage.store import EntityStore

REPO = Path(__file__).resolve().parents[1]
USER = "bench"  # as bench/_pyodide_store.py


async def dump(n: int, path: Path) -> None:
    kv = InMemoryKV()
    await fill(EntityStore(kv), USER, n)
    items = {
        key: {"value": item.value, "metadata": item.metadata} for key, item in kv._items.items()
    }
    path.write_text(json.dumps(items))


def spread(samples: list[float]) -> str:
    return f"{statistics.median(samples):8.1f} ms ({min(samples):.1f}-{max(samples):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--src", default=str(REPO / "src"))
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; CPU ms of the Node process per request")
    print(
        f"{'entities':>8} | {'context CPU ms (min-max)':>26} | {'PUT 20 CPU ms (min-max)':>26} |"
        f" {'wasm MB: imports / +context / +PUT':>36} | index MB"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"kv-{n}.json"
            asyncio.run(dump(n, path))
            index_mb = len(json.loads(path.read_text())[index_key(USER)]["value"]) / 2**20
            done = subprocess.run(
                [
                    *("node", "bench/pyodide_store.mjs", "--dump", str(path), "--n", str(n)),
                    *("--repeats", str(args.repeats), "--src", args.src),
                ],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(done.stdout.strip().splitlines()[-1])
            mem = row["wasm_mb"]
            print(
                f"{n:>8} | {spread(row['cpu_ms']['context']):>26} |"
                f" {spread(row['cpu_ms']['put20']):>26} |"
                f" {mem['imports']:>10.0f} / {mem['context']:>6.0f} / {mem['put20']:>6.0f}"
                f"{'':>12} | {index_mb:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
