"""Benchmark: the store's CPU time and memory per request inside Pyodide, without host I/O.

For users holding 1k and 10k entities, without and with vectors (bge-m3's 1,024 dimensions,
random values: the figures are CPU and memory, not ranking quality): a context request
(`retrieve_for_context`, limit 20) that parses the index (an isolate's first for the user, or
the first after a write), the same once the isolate holds the index parsed from the same
bytes (storage/index_snapshots.py: "warm"), and a 20-entity write (10 updates, 10 new), both in the
Worker alone (the store straight on KV) and in the user's writer, as production runs it
(`UserWriter` over sqlite3; its first write, after an eviction, is shown apart). The KV
is an in-process JS Map behind the Workers SDK (bench/pyodide_store.mjs), so the JS->Python
conversions are real. Prints CPU ms (median, min-max) and the wasm memory after imports, after
the context requests (run first) and at the end (wasm memory never shrinks, so each is the
peak so far); one fresh Node process a row.
The KV is filled on CPython (fast) and handed over as a JSON dump.

Run: `.venv/bin/python -m bench.bench_pyodide [--sizes 1000,10000] [--repeats 21] [--src DIR]`
(--src: another copy of src/, e.g. a checkout of the previous commit, for a before/after).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.bench_store import fill
from entity_memory.domain.keys import index_key
from entity_memory.embeddings.catalog import CATALOG, DEFAULT_MODEL
from entity_memory.embeddings.embedder import Embedder
from entity_memory.storage.kv import InMemoryKV
from entity_memory.storage.store import EntityStore

REPO = Path(__file__).resolve().parents[1]
USER = "bench"  # as bench/_pyodide_store.py


async def random_vectors(_model: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Workers AI's reply shape with random vectors: the index gets real-sized `vec` fields."""
    dims = CATALOG[DEFAULT_MODEL].dims
    return {"data": [[random.random() - 0.5 for _ in range(dims)] for _ in inputs["text"]]}


async def dump(n: int, path: Path, vectors: bool) -> None:
    kv = InMemoryKV()
    embedder = Embedder(CATALOG[DEFAULT_MODEL], random_vectors) if vectors else None
    await fill(EntityStore(kv, embedder=embedder), USER, n)
    items = {
        key: {"value": item.value, "metadata": item.metadata} for key, item in kv._items.items()
    }
    path.write_text(json.dumps(items))


def spread(samples: list[float]) -> str:
    return f"{statistics.median(samples):6.1f} ({min(samples):.0f}-{max(samples):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--src", default=str(REPO / "src"))
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; CPU ms of the Node process a request, median (min-max)")
    print(
        f"{'entities':>8} {'vectors':>7} | {'context':>16} | {'context, warm':>16} |"
        f" {'PUT 20, Worker':>16} |"
        f" {'PUT 20, writer':>16} | {'evicted':>10} | {'wasm MB: imports/context/all':>28} |"
        " index MB"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            for vectors in (False, True):
                path = Path(tmp) / f"kv-{n}-{vectors}.json"
                asyncio.run(dump(n, path, vectors))
                index_mb = len(json.loads(path.read_text())[index_key(USER)]["value"]) / 2**20
                done = subprocess.run(
                    [
                        *("node", "bench/pyodide_store.mjs", "--dump", str(path), "--n", str(n)),
                        *("--repeats", str(args.repeats), "--src", args.src),
                        *(["--vectors"] if vectors else []),
                    ],
                    cwd=REPO,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                row = json.loads(done.stdout.strip().splitlines()[-1])
                cpu, mem = row["cpu_ms"], row["wasm_mb"]
                print(
                    f"{n:>8} {'yes' if vectors else 'no':>7} | {spread(cpu['context']):>16} |"
                    f" {spread(cpu['context_warm']):>16} |"
                    f" {spread(cpu['put20']):>16} | {spread(cpu['put20_writer']):>16} |"
                    f" {row['first_ms']['put20_writer']:>10.0f} |"
                    f" {mem['imports']:>12.0f} / {mem['context']:>5.0f} / {max(mem.values()):>5.0f}"
                    " |"
                    f" {index_mb:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
