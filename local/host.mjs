#!/usr/bin/env node
// The offline local host: runs the Worker's src/entry.py on the npm `pyodide` package with
// bindings from wrangler's getPlatformProxy(), behind a Node http server.
// See local/README.md for how it works and which seams it papers over.
//
//   node local/host.mjs [--port N] [--persist DIR/v3] [--selftest-kv] [--entry MODULE]
//
// PORT and ENTITY_MEMORY_PERSIST are read when the flags are absent.

import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import {
  ExecutionContext,
  compatFlags,
  kvOperations,
  makeHostModule,
  presentEnv,
  settleAll,
} from "./runtime.mjs";
import { durableObjectNamespaces, ObjectHost } from "./durable_objects.mjs";
import { loadPyodideSnapshotted } from "./snapshot.mjs";
import { explainStartupWarnings } from "./startup_notes.mjs";
import {
  LOCAL_EMBEDDING_MODEL,
  startEmbeddingServer,
  withLocalEmbeddings,
} from "./embeddings.mjs";
import { LOCAL_TEXT_MODEL, startTextServer, withLocalText } from "./llm.mjs";
import { textUpstream, withUpstreamText } from "./upstream_llm.mjs";
import { cronPlan, describePlan, startCronTimer } from "./cron.mjs";
import { startLoopLagMonitor } from "./loop_lag.mjs";
import { handleScheduled, logTimerRun, runScheduled } from "./scheduled.mjs";

const started = performance.now();
// ENTITY_MEMORY_LOOP_LAG_MS=N: print every stretch of N ms the event loop was held (loop_lag.mjs).
const loopLag = startLoopLagMonitor();
const LOCAL_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(LOCAL_DIR, "..");
const WHEELS_DIR = path.join(LOCAL_DIR, ".wheels");
// The wheels unpacked once (per wheel set) and the bytecode cache, both gitignored.
const PACKAGES_DIR = path.join(LOCAL_DIR, ".pyodide-packages");
const SITE_DIR = path.join(PACKAGES_DIR, "site-packages");
const PYCACHE_DIR = path.join(PACKAGES_DIR, "pycache");
// Where the Python side sees them: NODEFS mounts, so edits to src/ need only a restart.
const PY_SRC = "/entity-memory/src";
const PY_RUNTIME = "/entity-memory/runtime";
const PY_SITE = "/entity-memory/site-packages";
const PY_PYCACHE = "/entity-memory/pycache";
const PY_UNPACK = "/entity-memory/unpack";
const PY_OBJECTS = "/entity-memory/objects";

const { values: opts } = parseArgs({
  options: {
    port: { type: "string" },
    host: { type: "string", default: "127.0.0.1" },
    persist: { type: "string" },
    "selftest-kv": { type: "boolean", default: false },
    // `--var NAME=VALUE`, repeatable: a var or secret over wrangler.toml and .dev.vars, as
    // `wrangler dev --var` does (e.g. `--var API_TOKEN=...` to run with auth on).
    var: { type: "string", multiple: true, default: [] },
    // Another wrangler.toml for the bindings (e.g. a test's smaller `[[ratelimits]]` limit).
    config: { type: "string" },
    // Believe a client's CF-Connecting-IP (only behind a proxy that sets it, as Cloudflare's
    // edge does); otherwise the socket's peer address replaces it. Also ENTITY_MEMORY_BEHIND_PROXY=1.
    "behind-proxy": { type: "boolean", default: false },
    // No local LLM (also ENTITY_MEMORY_NO_LLM=1): text models answer as Miniflare's binding
    // does ("needs to be run remotely") and `EXTRACTOR=auto` means the rules.
    "no-llm": { type: "boolean", default: false },
    // A llama-server already running (also ENTITY_MEMORY_LLM_URL), instead of starting one.
    "llm-url": { type: "string" },
    // An OpenAI-compatible `/v1` server (also ENTITY_MEMORY_TEXT_UPSTREAM) that answers
    // production's `@cf/` text models in Workers AI's reply shape (local/upstream_llm.mjs).
    "text-upstream": { type: "string" },
    // Fire scheduled() every N seconds instead of on wrangler.toml's crons (0: never); also
    // ENTITY_MEMORY_CRON_EVERY. See local/cron.mjs.
    "cron-every": { type: "string" },
    // The Python module (on src/) that exports `Default`; other values are for testing the host.
    entry: { type: "string", default: "entry" },
  },
});
const port = Number(opts.port ?? process.env.PORT ?? 8787);
const BEHIND_PROXY = opts["behind-proxy"] || process.env.ENTITY_MEMORY_BEHIND_PROXY === "1";
const CONFIG_PATH = path.resolve(opts.config ?? path.join(REPO, "wrangler.toml"));
// A detached watcher that stops our children if we die without cleaning up (kill -9).
spawn(process.execPath, [path.join(LOCAL_DIR, "reaper.mjs"), String(process.pid)], {
  detached: true,
  stdio: "ignore",
}).unref();
// The local embedding model loads in its own process while Pyodide starts.
const embeddings = opts["selftest-kv"] ? null : startEmbeddingServer(REPO);
// So does the local text model (local/llm.mjs), unless it is off or not set up.
const textModel = startTextServer({
  disabled: opts["selftest-kv"] || opts["no-llm"] || process.env.ENTITY_MEMORY_NO_LLM === "1",
  url: opts["llm-url"] ?? process.env.ENTITY_MEMORY_LLM_URL ?? "",
});
// Production's text models from an upstream named at start: AI_MODEL keeps its `@cf/` id.
const upstream = textUpstream(
  opts["text-upstream"] ?? process.env.ENTITY_MEMORY_TEXT_UPSTREAM ?? "",
);
// What `EXTRACTOR=auto` runs here: production's path when an upstream answers its model, else
// the rules. The local 1.5B model is not the default: judged by meaning on the dev set
// (JUDGE.md, blind pairs, 2026-12-06), rules + model held no more facts current than the rules
// alone (0.26 of 123) and stored more wrong ones (12.5% against 9.1%). It runs when asked:
// `"extractor": "workers-ai"` in a request, or `--var EXTRACTOR=workers-ai` (README).
const UPSTREAM_AUTO_EXTRACTOR = "workers-ai";
// A local model call waits for its turn behind the others (one slot) on a small CPU.
const LOCAL_AI_TIMEOUT_S = "300";
// The directory that holds kv/, d1/, ...: what `wrangler ... --local` uses is
// `<config dir>/.wrangler/state/v3`, and `--persist-to X` means `X/v3`.
const persistPath = path.resolve(
  opts.persist ?? process.env.ENTITY_MEMORY_PERSIST ?? path.join(REPO, ".wrangler/state/v3"),
);

// ENTITY_MEMORY_HOST_TIMINGS=1 prints how long each start-up phase took, to stderr.
function lap(phase) {
  if (process.env.ENTITY_MEMORY_HOST_TIMINGS) {
    console.error(`[timing] ${phase}: ${Math.round(performance.now() - started)} ms`);
  }
}

function fail(message) {
  console.error(`entity-memory local host: ${message}`);
  process.exit(1);
}

function wheelFiles() {
  const wheels = existsSync(WHEELS_DIR)
    ? readdirSync(WHEELS_DIR).filter((name) => name.endsWith(".whl"))
    : [];
  if (!wheels.length) fail(`no wheels in ${WHEELS_DIR}: run scripts/setup first`);
  return wheels.sort();
}

// A compiled wheel built for another Pyodide ABI imports with an obscure error much later;
// refuse it up front instead.
function checkWheelAbi(wheels, pyodide) {
  const pyodideDir = path.dirname(fileURLToPath(import.meta.resolve("pyodide")));
  const lock = JSON.parse(readFileSync(path.join(pyodideDir, "pyodide-lock.json")));
  const wanted = `pyemscripten_${lock.info.abi_version}_wasm32`;
  for (const wheel of wheels) {
    const platform = wheel.slice(0, -4).split("-").at(-1);
    if (platform !== "any" && platform !== wanted) {
      fail(`${wheel} is not built for this Pyodide (${pyodide.version}, needs ${wanted})`);
    }
  }
}

// Unpack the wheel set into SITE_DIR unless it already holds exactly this set. Unpacking into
// a private directory and renaming it into place keeps concurrent start-ups from seeing a
// half-written tree.
function ensureSitePackages(pyodide, wheels) {
  const stamp = JSON.stringify({
    pyodide: pyodide.version,
    wheels: wheels.map((name) => [name, statSync(path.join(WHEELS_DIR, name)).size]),
  });
  const stampFile = path.join(SITE_DIR, ".wheel-set.json");
  if (existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) return;

  const staging = `${SITE_DIR}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  pyodide.mountNodeFS(PY_UNPACK, staging);
  for (const wheel of wheels) {
    // A Node Buffer is a Uint8Array subclass that Pyodide does not recognise: pass a plain view.
    const bytes = readFileSync(path.join(WHEELS_DIR, wheel));
    pyodide.unpackArchive(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), "wheel", {
      extractDir: PY_UNPACK,
    });
  }
  pyodide.FS.unmount(PY_UNPACK);
  writeFileSync(path.join(staging, ".wheel-set.json"), stamp);
  rmSync(SITE_DIR, { recursive: true, force: true });
  try {
    renameSync(staging, SITE_DIR);
  } catch {
    rmSync(staging, { recursive: true, force: true }); // another start-up won the race
  }
}

// Set as soon as Miniflare is starting, so a failed start-up can still stop it.
let proxyPromise;

function startPlatformProxy(wrangler) {
  explainStartupWarnings(); // wrangler's and workerd's false Durable Object / AI warnings
  proxyPromise = wrangler.getPlatformProxy({
    configPath: CONFIG_PATH,
    // With remote bindings on, the [ai] binding demands a Cloudflare login.
    remoteBindings: false,
    persist: { path: persistPath },
  });
  proxyPromise.catch(() => {}); // awaited in boot(); avoid an unhandled-rejection crash meanwhile
  return proxyPromise;
}

async function boot() {
  // The slow steps are independent: loading Pyodide, importing wrangler, and Miniflare
  // starting its workerd (its own process). Pyodide starts first (its wasm compiles off the
  // main thread), wrangler is required in the meantime, and Python imports the app while
  // Miniflare is still coming up.
  const { loadPyodide, version } = await import("pyodide");
  const pyodideReady = loadPyodideSnapshotted({
    loadPyodide,
    version,
    cacheDir: PACKAGES_DIR,
    options: {
      stdout: (line) => console.log(line),
      stderr: (line) => console.error(line),
    },
  }).then((loaded) => {
    lap(`pyodide loaded (snapshot ${loaded[1]})`);
    return loaded;
  });
  // `require`, not `import()`: wrangler is CommonJS, and importing it as ESM first scans its
  // ~10 MB bundle for named exports (~0.35 s of the main thread).
  const wranglerReady = new Promise((resolve) => setImmediate(resolve)).then(() => {
    const wrangler = createRequire(import.meta.url)("wrangler");
    lap("wrangler imported");
    startPlatformProxy(wrangler);
    return wrangler;
  });
  const [[pyodide], wrangler] = await Promise.all([pyodideReady, wranglerReady]);
  const config = wrangler.unstable_readConfig({ config: CONFIG_PATH });

  const wheels = wheelFiles();
  checkWheelAbi(wheels, pyodide);
  ensureSitePackages(pyodide, wheels);
  pyodide.mountNodeFS(PY_SITE, SITE_DIR);
  mkdirSync(PYCACHE_DIR, { recursive: true });
  pyodide.mountNodeFS(PY_PYCACHE, PYCACHE_DIR);

  // Filled in once Miniflare is up; the SDK holds on to this very object as
  // `cloudflare:workers`'s env, so it must keep its identity.
  const env = {};
  pyodide.registerJsModule(
    "_entity_memory_host",
    makeHostModule({ env, flags: compatFlags(config) }),
  );
  pyodide.mountNodeFS(PY_SRC, path.join(REPO, "src"));
  pyodide.mountNodeFS(PY_RUNTIME, path.join(LOCAL_DIR, "runtime"));
  pyodide.runPython(`
import site, sys
# Bytecode goes to a host directory outside the repo's sources, so later start-ups skip
# compiling FastAPI, pydantic and the app (about a second).
sys.pycache_prefix = ${JSON.stringify(PY_PYCACHE)}
sys.dont_write_bytecode = False  # Pyodide turns it on by default
sys.path[:0] = [${JSON.stringify(PY_SRC)}, ${JSON.stringify(PY_RUNTIME)}, ${JSON.stringify(PY_SITE)}]
site.addsitedir(${JSON.stringify(PY_SITE)})  # already on sys.path; this runs its .pth files
`);
  lap("wheels ready");
  const dispatch = pyodide.pyimport("_host_dispatch");
  const entrypoint = dispatch.load_entrypoint(opts.entry, "Default");
  lap("entry.py imported");

  const proxy = await proxyPromise;
  lap("platform proxy ready");
  const wrapAi = (ai) =>
    withUpstreamText(withLocalText(withLocalEmbeddings(ai, embeddings), textModel), upstream);
  Object.assign(env, presentEnv(proxy.env, config, wrapAi));
  for (const pair of opts.var) {
    const eq = pair.indexOf("=");
    if (eq < 1) fail(`--var takes NAME=VALUE, got ${JSON.stringify(pair)}`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  // Production's text model cannot answer here; the local one does, under its own name, so
  // the Workers AI extractor runs as deployed. Without it `auto` means the rules, instead of
  // every extraction coming back degraded with "needs to be run remotely".
  // With an upstream, production's id stays and the upstream answers it.
  const localAnswers = textModel.available && !upstream.available;
  if (localAnswers && String(env.AI_MODEL ?? "@cf/").startsWith("@cf/")) {
    env.AI_MODEL = LOCAL_TEXT_MODEL;
    env.AI_TIMEOUT_S ??= LOCAL_AI_TIMEOUT_S;
  }
  if ((env.EXTRACTOR ?? "auto") === "auto" && !env.LLM_BASE_URL) {
    env.EXTRACTOR = upstream.available ? UPSTREAM_AUTO_EXTRACTOR : "rules";
  }
  // Production's embedding model cannot answer here; the local one does, under its own name
  // (vectors are tagged with it). `--var EMBEDDING_MODEL=off` turns the channel off.
  if (String(env.EMBEDDING_MODEL ?? "").startsWith("@cf/")) {
    env.EMBEDDING_MODEL = LOCAL_EMBEDDING_MODEL;
  }
  // Durable Objects of this Worker: run here, their storage under the state directory.
  const objectsDir = path.join(persistPath, "do");
  mkdirSync(objectsDir, { recursive: true });
  pyodide.mountNodeFS(PY_OBJECTS, objectsDir);
  const objects = new ObjectHost({
    pyodide,
    dispatch,
    module: opts.entry,
    env,
    stateDir: objectsDir,
    pyStateDir: PY_OBJECTS,
    makeContext: ({ id, storage }) => Object.assign(new ExecutionContext(), { id, storage }),
    track: loopLag.track,
  });
  Object.assign(env, durableObjectNamespaces(config, objects));
  objects.restoreAlarms();
  let plan;
  try {
    plan = cronPlan(config.triggers?.crons, opts["cron-every"] ?? process.env.ENTITY_MEMORY_CRON_EVERY);
  } catch (err) {
    fail(err.message);
  }
  for (const why of plan.skipped) console.error(`local host: cron left out: ${why}`);
  const cronText = describePlan(plan);
  return { pyodide, dispatch, entrypoint, env, proxy, cronPlan: plan, cronText };
}

function pythonErrorText(err) {
  // A PythonError's message is the formatted traceback.
  return String(err?.message ?? err);
}

function sendJson(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

// How long a request's body may take to arrive, whole: a client that declares more than it
// sends gets 408 instead of holding a connection (and its buffers) open.
const BODY_TIMEOUT_MS = 10_000;

class BodyRefused extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// The Worker's body cap (entity_memory.domain.limits, the one place it is set), read once.
let bodyCap;
function maxBodyBytes(app) {
  bodyCap ??= Number(app.pyodide.pyimport("entity_memory.domain.limits").MAX_BODY_BYTES);
  return bodyCap;
}

// The body, enforcing the cap while reading: a declared length over it is refused before a
// byte is read, a chunked body as soon as its bytes pass it (nothing past the cap is kept),
// and a body that stops arriving after BODY_TIMEOUT_MS.
function readBody(req, cap) {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new BodyRefused(413, "too_large", `request body over ${cap} bytes`);
    const declared = req.headers["content-length"];
    if (declared !== undefined && Number(declared) > cap) {
      reject(tooLarge());
      return;
    }
    const chunks = [];
    let size = 0;
    const finish = (err, body) => {
      clearTimeout(timer);
      req.off("data", onData).off("end", onEnd).off("error", finish);
      if (err) {
        req.pause();
        reject(err);
      } else resolve(body);
    };
    const onData = (chunk) => {
      size += chunk.length;
      if (size > cap) finish(tooLarge());
      else chunks.push(chunk);
    };
    const onEnd = () => finish(null, Buffer.concat(chunks));
    const timer = setTimeout(() => {
      const why = `request body not received within ${BODY_TIMEOUT_MS / 1000} s`;
      finish(new BodyRefused(408, "body_timeout", why));
    }, BODY_TIMEOUT_MS);
    req.on("data", onData).on("end", onEnd).on("error", finish);
  });
}

// Answer a refused body and drop the connection: the rest of the body is never read.
function refuseBody(req, res, err) {
  if (!(err instanceof BodyRefused)) throw err;
  res.shouldKeepAlive = false;
  res.on("finish", () => {
    req.socket.end();
    setTimeout(() => req.socket.destroy(), 2_000).unref();
  });
  res.writeHead(err.status, { "content-type": "application/json", connection: "close" });
  res.end(JSON.stringify({ error: { code: err.code, message: err.message } }));
}

function toWebRequest(req, body) {
  const url = new URL(req.url, `http://${req.headers.host ?? `127.0.0.1:${port}`}`);
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  }
  // The Worker counts failed authentications per CF-Connecting-IP: a client must not pick its own.
  if (!BEHIND_PROXY) headers.set("cf-connecting-ip", req.socket.remoteAddress ?? "unknown");
  const hasBody = !["GET", "HEAD"].includes(req.method) && body.length > 0;
  return new Request(url, { method: req.method, headers, body: hasBody ? body : undefined });
}

async function writeResponse(res, response) {
  const headers = [];
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") headers.push(name, value);
  }
  for (const cookie of response.headers.getSetCookie()) headers.push("set-cookie", cookie);
  res.writeHead(response.status, response.statusText || undefined, headers);
  // Streamed chunk by chunk: an ASGI app may stream its body through a TransformStream.
  if (response.body) {
    for await (const chunk of response.body) res.write(chunk);
  }
  res.end();
}

// The Worker's Response to `req`, or null once an error answer is written to `res`.
async function dispatchFetch(app, req, res) {
  let body;
  try {
    body = await readBody(req, maxBodyBytes(app));
  } catch (err) {
    refuseBody(req, res, err);
    return null;
  }
  let request;
  try {
    request = toWebRequest(req, body);
  } catch (err) {
    // A Host header that is not a host (`Host: a b`) makes no URL: the client's error, as at
    // Cloudflare's edge, not the Worker's. The same code as the Worker's own Host check.
    sendJson(res, 400, { error: { code: "invalid_host", message: `unusable request: ${err.message}` } });
    return null;
  }
  const ctx = new ExecutionContext();
  let response;
  try {
    response = await app.dispatch.call_fetch(app.entrypoint, ctx, app.env, request);
  } catch (err) {
    const text = pythonErrorText(err);
    console.error(`[fetch] ${req.method} ${req.url} raised:\n${text}`);
    res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
    res.end(`Worker threw an exception:\n${text}`);
    return null;
  }
  if (!(response instanceof Response)) {
    sendJson(res, 500, {
      error: { code: "bad_worker_response", message: "fetch() did not return a Response" },
    });
    return null;
  }
  return response;
}

async function handleFetch(app, req, res) {
  const response = await dispatchFetch(app, req, res);
  if (response) await writeResponse(res, response);
}

// The host's own part of /healthz: which extractor `auto` runs here and how the local text
// model is (a crash is seen at once: local/llm.mjs), added to the Worker's answer.
async function handleHealth(app, req, res) {
  const response = await dispatchFetch(app, req, res);
  if (!response) return;
  const body = response.status === 200 ? await response.clone().json().catch(() => null) : null;
  if (!body || typeof body !== "object") {
    await writeResponse(res, response);
    return;
  }
  const host = { extractor: app.env.EXTRACTOR, textModel: textModel.status(), cron: app.cronText };
  const headers = Object.fromEntries(response.headers);
  delete headers["content-length"];
  res.writeHead(200, headers);
  res.end(JSON.stringify({ ...body, host }));
}

async function runKvSelftest(app) {
  const selftest = app.pyodide.pyimport("_kv_selftest");
  try {
    const kept = await selftest.run(app.env);
    console.log(`kv selftest kept ${kept}`);
    console.log("kv selftest ok");
    return 0;
  } catch (err) {
    console.error(pythonErrorText(err));
    console.error("kv selftest FAILED");
    return 1;
  }
}

// The KV calls made since start, by method: what extraction jobs cost (local/runtime.mjs).
async function handleKvOperations(app, req, res) {
  sendJson(res, 200, { ...kvOperations });
}

// Paths the host answers itself; every other request goes to the Worker.
const HOST_ROUTES = {
  "/__scheduled": (app, req, res) => handleScheduled(app, req, res, sendJson),
  "/__kv-operations": handleKvOperations,
  "/healthz": handleHealth,
};

async function main() {
  let app;
  try {
    app = await boot();
  } catch (err) {
    console.error(pythonErrorText(err));
    await proxyPromise?.then((proxy) => proxy.dispose()).catch(() => {});
    fail("start-up failed");
  }

  let shuttingDown = false;
  const shutdown = async (code) => {
    if (shuttingDown) return;
    shuttingDown = true;
    await settleAll(2000);
    // Stops the Miniflare/workerd child; without it the process would linger.
    await app.proxy.dispose().catch(() => {});
    process.exit(code);
  };
  process.on("SIGINT", () => shutdown(0));
  process.on("SIGTERM", () => shutdown(0));

  if (opts["selftest-kv"]) {
    await shutdown(await runKvSelftest(app));
    return;
  }

  const server = createServer((req, res) => {
    const route = HOST_ROUTES[req.url.split("?")[0]] ?? handleFetch;
    loopLag.track(`${req.method} ${req.url}`, route(app, req, res)).catch((err) => {
      console.error(`[host] ${req.method} ${req.url}:`, err);
      if (!res.headersSent) sendJson(res, 500, { error: { code: "host_error", message: String(err) } });
      else res.destroy(err);
    });
  });
  server.on("error", (err) => {
    console.error(`entity-memory local host: cannot listen on ${opts.host}:${port}: ${err.message}`);
    shutdown(1);
  });
  server.listen(port, opts.host, () => {
    const { port: bound } = server.address();
    const ms = Math.round(performance.now() - started);
    console.log(`entity-memory local host ready on http://${opts.host}:${bound} in ${ms} ms`);
    const loading = textModel.state === "starting" ? ", loading" : "";
    const local = textModel.available ? `${LOCAL_TEXT_MODEL} (${textModel.why}${loading})` : textModel.why;
    const text = upstream.available ? `${upstream.why}; ${local}` : local;
    console.log(`text model: ${text}; default extractor: ${app.env.EXTRACTOR}`);
    console.log(`cron: ${app.cronText}`);
  });
  startCronTimer(app.cronPlan, async (cron, time) => logTimerRun(cron, await runScheduled(app, cron, time)));
}

await main();
