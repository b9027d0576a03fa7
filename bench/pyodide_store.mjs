#!/usr/bin/env node
// The store inside Pyodide with an in-process KV stand-in: CPU time and wasm memory of a
// context request and a 20-entity write, without the local host's I/O. Driven by
// bench/bench_pyodide.py, which fills the KV on CPython and passes it here as a JSON dump:
//
//   node bench/pyodide_store.mjs --dump FILE --n N [--repeats 7] [--src DIR] [--vectors]
//
// The KV is a JS Map behind local/runtime.mjs's `KvNamespace` class, so the Python side sees
// it through the Workers SDK exactly as on the host (conversions included), and the adapter
// under test is src/adapters/workers.py (or --src's copy, for a before/after).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { Ai, KvNamespace, compatFlags, makeHostModule } from "../local/runtime.mjs";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SITE_DIR = path.join(REPO, "local/.pyodide-packages/site-packages");

const { values: opts } = parseArgs({
  options: {
    dump: { type: "string" },
    n: { type: "string" },
    repeats: { type: "string", default: "7" },
    src: { type: "string", default: path.join(REPO, "src") },
    vectors: { type: "boolean", default: false },
  },
});
if (!existsSync(SITE_DIR)) {
  console.error(`no ${SITE_DIR}: start the local host once (scripts/serve) to unpack the wheels`);
  process.exit(1);
}

// Workers KV semantics the store uses, in a Map of key -> {value, metadata}. Values are
// kept as UTF-8 bytes, as KV holds them: "arrayBuffer" hands over a copy, "text" decodes.
class MemoryKv {
  constructor(items) {
    this.items = new Map(
      Object.entries(items).map(([k, item]) => [k, { ...item, value: encoder.encode(item.value) }]),
    );
  }
  #read(key, type) {
    const item = this.items.get(key);
    if (item === undefined) return null;
    if (type === "arrayBuffer") return item.value.slice().buffer;
    const text = decoder.decode(item.value);
    return type === "json" ? JSON.parse(text) : text;
  }
  async get(key, type = "text") {
    if (Array.isArray(key)) return new Map(key.map((k) => [k, this.#read(k, type)]));
    return this.#read(key, typeof type === "string" ? type : (type?.type ?? "text"));
  }
  async put(key, value, options = {}) {
    this.items.set(key, { value: encoder.encode(String(value)), metadata: options.metadata ?? null });
  }
  async delete(key) {
    this.items.delete(key);
  }
  async list({ prefix = "", limit = 1000, cursor } = {}) {
    const names = [...this.items.keys()].filter((k) => k.startsWith(prefix)).sort();
    const after = cursor ? names.filter((k) => k > cursor) : names;
    const page = after.slice(0, limit);
    const complete = after.length <= limit;
    return {
      keys: page.map((name) => ({ name, metadata: this.items.get(name).metadata ?? undefined })),
      list_complete: complete,
      cursor: complete ? undefined : page.at(-1),
    };
  }
}

// Workers AI's embedding model, stood in for by random vectors of bge-m3's size (1,024): the
// bench measures the CPU of handling vectors (the reply's conversion, packing, scoring), not
// the model, whose call is I/O for the Worker.
const EMBEDDING_DIMS = 1024;
const randomEmbeddings = {
  async run(_model, inputs) {
    const data = inputs.text.map(() => Array.from({ length: EMBEDDING_DIMS }, () => Math.random() - 0.5));
    return { shape: [data.length, EMBEDDING_DIMS], data };
  },
};

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const { loadPyodide } = await import("pyodide");
const pyodide = await loadPyodide();
const env = {
  ENTITIES: new KvNamespace(new MemoryKv(JSON.parse(readFileSync(opts.dump)))),
  AI: new Ai(randomEmbeddings),
};
pyodide.registerJsModule("_entity_memory_host", makeHostModule({ env, flags: compatFlags({}) }));
pyodide.mountNodeFS("/em/src", path.resolve(opts.src));
pyodide.mountNodeFS("/em/runtime", path.join(REPO, "local/runtime"));
pyodide.mountNodeFS("/em/site", SITE_DIR);
pyodide.mountNodeFS("/em/repo", REPO);
pyodide.runPython(`
import site, sys
sys.path[:0] = ["/em/src", "/em/runtime", "/em/site", "/em/repo"]
site.addsitedir("/em/site")
`);
const driver = pyodide.pyimport("bench._pyodide_store");
const wasmMb = () => pyodide._module.HEAP8.length / 2 ** 20;
const jsMb = () => process.memoryUsage().heapUsed / 2 ** 20;

const cpuMs = async (fn) => {
  const cpu = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / 1000;
};

const bench = await driver.Bench.create(env, Number(opts.n), Boolean(opts.vectors));
const memory = { imports: wasmMb() };
const figures = {};
const first = {};
for (const op of ["context", "context_warm", "put20", "put20_writer"]) {
  if (op === "put20_writer") await bench.evict_writer();
  // The first call is not a per-request cost (first-use imports), except in the writer, where
  // it is what an instance pays after an eviction: it is reported apart.
  first[op] = await cpuMs(() => bench[op]());
  const samples = [];
  for (let i = 0; i < Number(opts.repeats); i++) samples.push(await cpuMs(() => bench[op]()));
  figures[op] = samples;
  memory[op] = wasmMb();
}
console.log(
  JSON.stringify({ n: Number(opts.n), cpu_ms: figures, first_ms: first, wasm_mb: memory, js_heap_mb: jsMb() }),
);
