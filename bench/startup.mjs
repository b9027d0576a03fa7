#!/usr/bin/env node
// One start-up of the Worker in Pyodide, measured: the CPU from `import entry` to the first
// answer (GET /healthz through `Default.fetch`, as workerd calls it). Driven by
// bench/startup.py, which runs it in a fresh process per sample:
//
//   node bench/startup.mjs --src DIR --pycache DIR [--write-bytecode]
//
// The locked wheel set (local/.wheels) is unpacked into Pyodide's in-memory site-packages
// before the clock starts, as the deployed bundle's python_modules/ are there before the
// import. Bytecode is read from and (with --write-bytecode) written to --pycache
// (sys.pycache_prefix): an empty one is a cold start, a filled one a start with bytecode.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { ExecutionContext, compatFlags, makeHostModule } from "../local/runtime.mjs";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WHEELS = path.join(REPO, "local/.wheels");

const { values: opts } = parseArgs({
  options: {
    src: { type: "string", default: path.join(REPO, "src") },
    pycache: { type: "string" },
    "write-bytecode": { type: "boolean", default: false },
    imports: { type: "boolean", default: false }, // also where the import's time went
  },
});

const { loadPyodide } = await import("pyodide");
const pyodide = await loadPyodide();
const site = pyodide.runPython("import site; site.getsitepackages()[0]");
for (const wheel of readdirSync(WHEELS).filter((name) => name.endsWith(".whl"))) {
  const bytes = readFileSync(path.join(WHEELS, wheel));
  pyodide.unpackArchive(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), "wheel", {
    extractDir: site,
  });
}
const env = {};
pyodide.registerJsModule("_entity_memory_host", makeHostModule({ env, flags: compatFlags({}) }));
pyodide.mountNodeFS("/em/src", path.resolve(opts.src));
pyodide.mountNodeFS("/em/runtime", path.join(REPO, "local/runtime"));
pyodide.mountNodeFS("/em/pycache", path.resolve(opts.pycache));
pyodide.mountNodeFS("/em/bench", path.join(REPO, "bench"));
pyodide.runPython(`
import site, sys
sys.pycache_prefix = "/em/pycache"
sys.dont_write_bytecode = ${opts["write-bytecode"] ? "False" : "True"}
sys.path[:0] = ["/em/src", "/em/runtime"]
site.addsitedir(${JSON.stringify(site)})  # its .pth files (the SDK's patches)
`);
const timing = opts.imports
  ? pyodide.runPython("sys.path.append('/em/bench'); import _import_timing; _import_timing.install()")
  : null;
const before = pyodide.runPython("len(__import__('sys').modules)");

const cpuMs = (since) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};
const cpu = process.cpuUsage();
const dispatch = pyodide.pyimport("_host_dispatch");
const entrypoint = dispatch.load_entrypoint("entry", "Default");
const importMs = cpuMs(cpu);
const modules = pyodide.runPython("len(__import__('sys').modules)") - before;
const request = new Request("http://startup.bench/healthz");
const response = await dispatch.call_fetch(entrypoint, new ExecutionContext(), env, request);
const status = response.status;
const totalMs = cpuMs(cpu);
console.log(
  JSON.stringify({
    import_ms: importMs,
    answer_ms: totalMs - importMs,
    total_ms: totalMs,
    modules,
    status,
    ...(timing ? { areas: timing.by_area().toJs({ dict_converter: Object.fromEntries }) } : {}),
  }),
);
