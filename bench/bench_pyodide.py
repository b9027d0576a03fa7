"""Benchmark: CPU and memory of a context request and a 20-entity write inside Pyodide.

CPython fills a user with N entities (the store's own batch path, on `InMemoryKV`) and writes
what KV would hold to a JSON file; `bench/bench_pyodide.mjs` then loads Pyodide as the local
host does, puts that data in an in-process KV stand-in and times the request through the
Worker's adapter (`WorkersKV` behind the SDK's env wrapper) and a SQLite ledger. One fresh
Pyodide per (N, request), so each memory figure belongs to that request alone.

Prints median [min..max] of CPU ms (the node process: Pyodide plus the JS stand-ins) and wall
ms, wasm memory after imports and its peak (wasm memory never shrinks), and the JS heap's peak.
The index carries no vectors here (the local embedding model takes ~50 ms a text; filling 10k
would take minutes).

Run: `.venv/bin/python -m bench.bench_pyodide [--sizes 1000,10000] [--repeats 7]`
(needs local/.pyodide-packages/, which the local host unpacks on its first start).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.bench_store import fill
from entity_memory.storage.kv import InMemoryKV
from entity_memory.storage.store import EntityStore

ROOT = Path(__file__).resolve().parent.parent


def dataset(n: int, path: Path) -> None:
    """KV's content for a user of `n` entities, as {key: value text}."""
    kv = InMemoryKV()
    asyncio.run(fill(EntityStore(kv), "bench", n))
    path.write_text(json.dumps({key: item.value for key, item in kv._items.items()}))


def measure(data: Path, n: int, op: str, repeats: int) -> dict:
    done = subprocess.run(
        [
            "node",
            "bench/bench_pyodide.mjs",
            "--data",
            str(data),
            "--n",
            str(n),
            "--op",
            op,
            "--repeats",
            str(repeats),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench_pyodide.mjs failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(samples: list[float]) -> str:
    return f"{statistics.median(samples):7.1f} [{min(samples):.1f}..{max(samples):.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--ops", default="context,write")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(
        f"{'entities':>8} | {'request':<8} | {'CPU ms':>22} | {'wall ms':>22} |"
        f" {'wasm after imports':>18} | {'wasm peak':>9} | {'JS heap peak':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            data = Path(tmp) / f"kv-{n}.json"
            dataset(n, data)
            for op in args.ops.split(","):
                r = measure(data, n, op, args.repeats)
                print(
                    f"{n:>8} | {op:<8} | {spread(r['cpu_ms']):>22} | {spread(r['wall_ms']):>22} |"
                    f" {r['wasm_after_imports_mb']:>15.1f} MB | {r['wasm_peak_mb']:>6.1f} MB |"
                    f" {r['js_heap_peak_mb']:>9.1f} MB",
                    flush=True,
                )


if __name__ == "__main__":
    main()
