#!/usr/bin/env node
// One Pyodide measurement for bench/bench_pyodide.py: load Pyodide as the local host does,
// fill an in-process KV stand-in from a data file ({key: value text}, made on CPython), then
// time `--op` (context | write) `--repeats` times through bench/pyodide_ops.py.
// Prints one JSON line: CPU and wall ms per run, wasm memory after imports and at the end
// (wasm memory only grows, so the end is the peak), and the JS heap's peak.
//
//   node bench/bench_pyodide.mjs --data FILE --n N --op context --repeats 7

import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { compatFlags, makeHostModule } from "../local/runtime.mjs";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGES = path.join(REPO, "local/.pyodide-packages");
const { values: opts } = parseArgs({
  options: {
    data: { type: "string" },
    n: { type: "string" },
    op: { type: "string", default: "context" },
    repeats: { type: "string", default: "7" },
  },
});

// Workers KV in a Map: the class name the SDK's env wrapper converts for, values kept as text.
class KvNamespace {
  #values;

  constructor(values) {
    this.#values = values;
  }

  async get(key, type = "text") {
    const one = (name) => {
      const text = this.#values.get(name);
      if (text === undefined) return null;
      return type === "json" ? JSON.parse(text) : text;
    };
    return Array.isArray(key) ? new Map(key.map((name) => [name, one(name)])) : one(key);
  }

  async put(key, value) {
    this.#values.set(key, String(value));
  }

  async delete(key) {
    this.#values.delete(key);
  }

  async list({ prefix = "", limit = 1000 } = {}) {
    const names = [...this.#values.keys()].filter((k) => k.startsWith(prefix)).sort();
    const keys = names.slice(0, limit).map((name) => ({ name }));
    return { keys, list_complete: names.length <= limit };
  }
}

const site = path.join(PACKAGES, "site-packages");
if (!existsSync(site)) {
  console.error(`no ${site}: start the local host once (scripts/serve) to unpack the wheels`);
  process.exit(1);
}
const { loadPyodide } = await import("pyodide");
const pyodide = await loadPyodide();
const mounts = {
  "/bench/site": site,
  "/bench/src": path.join(REPO, "src"),
  "/bench/runtime": path.join(REPO, "local/runtime"),
  "/bench/root/bench": path.join(REPO, "bench"),
  "/bench/migrations": path.join(REPO, "migrations"),
  "/bench/pycache": path.join(PACKAGES, "pycache"),
};
mkdirSync(mounts["/bench/pycache"], { recursive: true });
for (const [where, from] of Object.entries(mounts)) pyodide.mountNodeFS(where, from);
const env = {};
pyodide.registerJsModule("_entity_memory_host", makeHostModule({ env, flags: compatFlags({}) }));
pyodide.runPython(`
import site, sys
sys.pycache_prefix = "/bench/pycache"
sys.dont_write_bytecode = False
sys.path[:0] = ["/bench/src", "/bench/runtime", "/bench/root", "/bench/site"]
site.addsitedir("/bench/site")
`);
const values = new Map(Object.entries(JSON.parse(readFileSync(opts.data, "utf8"))));
env.ENTITIES = new KvNamespace(values);
const ops = pyodide.pyimport("bench.pyodide_ops");
const bench = ops.Bench(env, Number(opts.n), "/bench/migrations");
const wasmBytes = () => pyodide._module.HEAPU8.buffer.byteLength;
pyodide.runPython("import gc; gc.collect()");
const afterImports = wasmBytes();

const cpuMs = [];
const wallMs = [];
let heapPeak = 0;
const run = bench[opts.op];
await run(); // warm-up: first-use imports and caches
for (let i = 0; i < Number(opts.repeats); i++) {
  const cpu = process.cpuUsage();
  const t = performance.now();
  await run();
  wallMs.push(performance.now() - t);
  const used = process.cpuUsage(cpu);
  cpuMs.push((used.user + used.system) / 1000);
  heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
}
console.log(
  JSON.stringify({
    op: opts.op,
    n: Number(opts.n),
    cpu_ms: cpuMs,
    wall_ms: wallMs,
    wasm_after_imports_mb: afterImports / 2 ** 20,
    wasm_peak_mb: wasmBytes() / 2 ** 20,
    js_heap_peak_mb: heapPeak / 2 ** 20,
  }),
);
