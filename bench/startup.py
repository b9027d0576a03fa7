"""Start-up CPU of the Worker in Pyodide: `import entry` to the first answer, cold and warm.

    python -m bench.startup [--runs 3] [--ref main]

Each sample is a fresh node process (bench/startup.mjs): Pyodide 314 loaded and the locked
wheel set unpacked first, then the clock runs from `import entry` until `Default.fetch` has
answered GET /healthz. *cold*: no bytecode anywhere (what Cloudflare's deploy-time snapshot
pays, since the bundle ships .py files only); *bytecode*: the modules' .pyc already written (a
later start of the local host). CPU is the node process's user + system time, so a loaded
machine changes the figures little; the median of --runs samples is printed, with the range.

`--ref REF` measures another commit's src/ (exported with `git archive`) in the same way, for
a before/after: the import of what a request does not need is the part this bench watches.
`--floor` also measures a Worker that is only the framework (the SDK, FastAPI, pydantic and
one route): what no change to the app's own modules can go below.
Python Workers have an unpublished start-up CPU limit ("Python Worker startup exceeded CPU
limit"), reported hit at about 4.8 s by others.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[1]
#: The node that scripts/setup linked when the system's is older; the system's otherwise.
NODE_PATH = os.pathsep.join([str(REPO / "node_modules" / ".bin"), os.environ.get("PATH", "")])


class Sample(BaseModel):
    import_ms: float
    answer_ms: float
    total_ms: float
    modules: int
    status: int


def run_once(src: Path, pycache: Path, write_bytecode: bool = False) -> Sample:
    cmd = ["node", "bench/startup.mjs", "--src", str(src), "--pycache", str(pycache)]
    if write_bytecode:
        cmd.append("--write-bytecode")
    done = subprocess.run(
        cmd,
        cwd=REPO,
        env={**os.environ, "PATH": NODE_PATH},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench/startup.mjs failed:\n{done.stdout}\n{done.stderr}")
    sample = Sample.model_validate(json.loads(done.stdout.strip().splitlines()[-1]))
    if sample.status != 200:
        raise RuntimeError(f"GET /healthz answered {sample.status}, not 200")
    return sample


def export_src(ref: str, into: Path) -> Path:
    """The src/ of a commit, as files (git archive), to measure it beside the work tree's."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "src"], cwd=REPO, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


#: The framework alone: the Worker entrypoint, an empty FastAPI app and one route.
FLOOR_ENTRY = """
import asgi
from fastapi import FastAPI
from workers import WorkerEntrypoint

app = FastAPI()


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        return await asgi.fetch(app, request, self.env, self.ctx)
"""


def measure(src: Path, runs: int) -> dict[str, list[Sample]]:
    with tempfile.TemporaryDirectory() as tmp:
        cold = []
        for i in range(runs):
            empty = Path(tmp) / f"cold-{i}"
            empty.mkdir()
            cold.append(run_once(src, empty))
        warm_cache = Path(tmp) / "bytecode"
        warm_cache.mkdir()
        run_once(src, warm_cache, write_bytecode=True)  # fills the cache; not a sample
        warm = [run_once(src, warm_cache) for _ in range(runs)]
    return {"cold": cold, "bytecode": warm}


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def print_table(label: str, results: dict[str, list[Sample]]) -> None:
    print(f"\n{label}: CPU ms, median (range) of {len(results['cold'])} fresh processes")
    print(f"{'start':<10} {'import entry':>20} {'first answer':>18} {'total':>20} {'modules':>8}")
    for kind, samples in results.items():
        print(
            f"{kind:<10} {_cell([s.import_ms for s in samples]):>20}"
            f" {_cell([s.answer_ms for s in samples]):>18}"
            f" {_cell([s.total_ms for s in samples]):>20} {samples[0].modules:>8}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ref", help="also measure this commit's src/ (e.g. main)")
    parser.add_argument("--floor", action="store_true", help="also measure the framework alone")
    args = parser.parse_args()
    if not any((REPO / "local" / ".wheels").glob("*.whl")):
        raise SystemExit("no local/.wheels: run scripts/setup first")
    if args.ref:
        with tempfile.TemporaryDirectory() as tmp:
            print_table(args.ref, measure(export_src(args.ref, Path(tmp)), args.runs))
    if args.floor:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "entry.py").write_text(FLOOR_ENTRY)
            print_table("framework alone", measure(Path(tmp), args.runs))
    print_table("work tree", measure(REPO / "src", args.runs))


if __name__ == "__main__":
    main()
