// The local answer to Workers AI text generation: a real instruct model, not a stand-in.
//
// Miniflare's AI binding only says "needs to be run remotely". The host runs `llama-server`
// (built by scripts/setup-llm from the llama.cpp copy in llama-cpp-python's sdist) on the GGUF
// of Qwen2.5-Coder-1.5B-Instruct that setup-llm assembled from its PyPI parts, and answers
// `AI.run(LOCAL_TEXT_MODEL, {messages, response_format, max_tokens, ...})` in Workers AI's
// reply shape: `{response, usage}`, `response` already parsed when JSON mode was asked for and
// the text is JSON. Whatever it answers is the model's output; a failure is an error, never a
// made-up reply. Every other model still goes to the platform binding.
//
// Where the server comes from, first that applies:
//   --no-llm (or ENTITY_MEMORY_NO_LLM=1)   none: text models answer as Miniflare's binding does
//   --llm-url URL / ENTITY_MEMORY_LLM_URL  a llama-server already running (tests share one)
//   <cache>/llm.json from scripts/setup-llm  started here, stopped with the host
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { freePort, idleThreads, waitReady } from "./child_server.mjs";

export const LOCAL_TEXT_MODEL = "local/qwen2.5-coder-1.5b-instruct";
// Loading 1.1 GB from the page cache takes seconds; from a cold disk on a busy machine, more.
const READY_TIMEOUT_MS = 180_000;
// A server that dies this many times in a row before answering is given up.
const MAX_START_FAILURES = 3;
// The wait before restarting a server that died before answering, doubled each time.
const RESTART_FIRST_DELAY_MS = 1_000;
const RESTART_MAX_DELAY_MS = 30_000;
// Lines of llama-server's stderr kept to say why it died.
const STDERR_LINES_KEPT = 5;
// How long a failed call waits for the server's exit to be seen, to say it died.
const EXIT_NOTICE_MS = 2_000;
// The server's window: a chunk of a session, its context and the reply fit (chat_models.py
// assumes 8,192 for this model too).
const CONTEXT_TOKENS = 8192;
// Workers AI's default output budget for its text models when `max_tokens` is absent.
const DEFAULT_MAX_TOKENS = 256;
// Workers AI sampling inputs with the same meaning on llama-server, and the one renamed.
const SAMPLING = ["temperature", "top_p", "top_k", "seed", "frequency_penalty", "presence_penalty"];
const RENAMED = { repetition_penalty: "repeat_penalty" };

function cacheDir() {
  if (process.env.ENTITY_MEMORY_CACHE) return process.env.ENTITY_MEMORY_CACHE;
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  return path.join(base, "entity-memory");
}

// What scripts/setup-llm built, or why there is nothing to run.
function installed() {
  const file = path.join(cacheDir(), "llm.json");
  if (!existsSync(file)) return { missing: `${file} not found (run scripts/setup without --no-llm)` };
  const { model, server, unusable } = JSON.parse(readFileSync(file, "utf8"));
  // setup-llm's smoke test failed: its reason, instead of a server that dies at once.
  if (unusable) return { unusable };
  for (const p of [model, server]) if (!existsSync(p)) return { missing: `${p} not found` };
  return { model, server };
}

function unavailable(why) {
  const ready = Promise.reject(new Error(why));
  ready.catch(() => {});
  return { available: false, why, ready, stop() {}, status: () => ({ state: "off", detail: why }) };
}

// How a child ended, in words ("killed by SIGKILL", "exited with code 1").
export function howItEnded(code, signal) {
  return signal ? `killed by ${signal}` : `exited with code ${code}`;
}

// The backoff before the n-th restart in a row of a server that never became ready.
export function restartDelayMs(failuresInARow) {
  return Math.min(RESTART_MAX_DELAY_MS, RESTART_FIRST_DELAY_MS * 2 ** Math.max(0, failuresInARow - 1));
}

// llama-server under supervision: its exit is seen at once (the child's `exit` event, by
// signal or code), said on stderr, kept for /healthz (`status()`), and answered by a restart.
// A server that dies MAX_START_FAILURES times in a row before ever answering (an instruction
// this CPU lacks, a corrupt model) is given up: `state: "failed"`, and every call says why.
class SupervisedServer {
  constructor(found) {
    this.found = found;
    this.available = true;
    this.why = `llama-server on ${path.basename(found.model)}`;
    this.state = "starting";
    this.restarts = 0;
    this.lastExit = null;
    this.failuresInARow = 0;
    this.stopping = false;
    this.child = null;
    this.base = null;
    this.tail = [];
    this.listeners = new Set();
    this.ready = this.#pending();
    this.#spawn();
  }

  // A fresh `ready` for callers to wait on while the server (re)starts.
  #pending() {
    const p = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    p.catch(() => {});
    return p;
  }

  async #spawn() {
    const started = Date.now();
    const port = await freePort();
    // Measured on 2 cores at load 7-8: a 244-token prompt and 24 tokens out took 18-26 s with
    // one thread against 34-54 s with two. ENTITY_MEMORY_LLM_THREADS overrides.
    const threads = String(idleThreads(process.env.ENTITY_MEMORY_LLM_THREADS));
    const args = ["-m", this.found.model, "--host", "127.0.0.1", "--port", String(port)];
    args.push("-c", String(CONTEXT_TOKENS), "-t", threads, "--parallel", "1", "--no-webui");
    const child = spawn(this.found.server, args, { stdio: ["ignore", "ignore", "pipe"] });
    this.child = child;
    this.tail = [];
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text) => {
      this.tail.push(...text.split("\n").filter((line) => line.trim()));
      this.tail.splice(0, Math.max(0, this.tail.length - STDERR_LINES_KEPT));
    });
    child.once("exit", (code, signal) => this.#exited(child, howItEnded(code, signal)));
    // A binary that cannot be run at all (EACCES): no `exit` follows.
    child.once("error", (err) => this.#exited(child, `could not start (${err.code ?? err.message})`));
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitReady(`${base}/health`, child, "llama-server", READY_TIMEOUT_MS);
    } catch (err) {
      if (child.exitCode === null && child.signalCode === null) {
        console.error(`local host: ${err.message}; stopping it`);
        child.kill("SIGKILL"); // its exit restarts it
      }
      return;
    }
    if (this.child !== child) return;
    this.base = base;
    this.state = "ready";
    this.failuresInARow = 0;
    const after = this.restarts ? ` (restart ${this.restarts})` : "";
    console.log(`text model ready in ${((Date.now() - started) / 1000).toFixed(1)} s${after}`);
    this.resolveReady(base);
  }

  #exited(child, how) {
    if (this.child !== child || this.stopping || child.ended) return;
    child.ended = true;
    const wasReady = this.state === "ready";
    this.lastExit = { how, at: new Date().toISOString(), pid: child.pid, stderr: this.tail.slice() };
    this.base = null;
    for (const listener of this.listeners) listener(how);
    if (wasReady) this.ready = this.#pending();
    this.failuresInARow = wasReady ? 0 : this.failuresInARow + 1;
    if (this.failuresInARow >= MAX_START_FAILURES) {
      this.state = "failed";
      const last = this.tail.at(-1) ? `; its last words: ${this.tail.at(-1)}` : "";
      this.failure = `llama-server ${how} ${this.failuresInARow} times before answering${last}`;
      console.error(`local host: ${this.failure}; no local text model (restart the host to try again)`);
      this.rejectReady(new Error(this.failure));
      return;
    }
    this.state = "restarting";
    const delay = wasReady ? 0 : restartDelayMs(this.failuresInARow);
    console.error(`local host: llama-server (pid ${child.pid}) ${how}; restarting it`);
    setTimeout(() => {
      if (this.stopping) return;
      this.restarts += 1;
      this.#spawn();
    }, delay).unref();
  }

  // Calls `listener(how)` when the server exits, until the returned function is called.
  onExit(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  status() {
    const detail = {
      starting: "llama-server is loading the model",
      ready: "llama-server answers",
      restarting: `llama-server ${this.lastExit?.how}; restarting it`,
      failed: this.failure,
    }[this.state];
    const out = { state: this.state, detail, restarts: this.restarts };
    if (this.state === "ready") out.pid = this.child.pid;
    if (this.lastExit) out.lastExit = { how: this.lastExit.how, at: this.lastExit.at };
    return out;
  }

  stop() {
    this.stopping = true;
    this.child?.kill("SIGTERM");
  }
}

// The text model server: `{available, why, ready: Promise<baseUrl>, status(), stop}`.
export function startTextServer({ disabled = false, url = "" } = {}) {
  if (disabled) return unavailable("the local LLM is off (--no-llm)");
  if (url) {
    const status = () => ({ state: "external", detail: `using ${url}` });
    return { available: true, why: `using ${url}`, ready: Promise.resolve(url), stop() {}, status };
  }
  const found = installed();
  if (found.missing) return unavailable(`no local LLM: ${found.missing}`);
  if (found.unusable) return unavailable(`no local LLM: scripts/setup found ${found.unusable}`);
  const server = new SupervisedServer(found);
  process.once("exit", () => server.stop());
  return server;
}

// Workers AI's `response_format` in llama-server's (OpenAI's) form. The older Workers AI
// models take the schema itself under `json_schema`; the newer ones `{name, schema, strict}`.
function responseFormat(format) {
  if (!format || format.type !== "json_schema") return format;
  const js = format.json_schema ?? {};
  if (js.schema && typeof js.schema === "object") return format;
  return { type: "json_schema", json_schema: { name: "reply", schema: js, strict: true } };
}

export function chatBody(inputs) {
  const messages = Array.isArray(inputs?.messages)
    ? inputs.messages
    : [{ role: "user", content: String(inputs?.prompt ?? "") }];
  const body = { messages, max_tokens: inputs?.max_tokens ?? DEFAULT_MAX_TOKENS };
  for (const key of SAMPLING) if (inputs?.[key] !== undefined) body[key] = inputs[key];
  for (const [ours, theirs] of Object.entries(RENAMED)) {
    if (inputs?.[ours] !== undefined) body[theirs] = inputs[ours];
  }
  if (inputs?.response_format) body.response_format = responseFormat(inputs.response_format);
  return body;
}

// llama-server's reply in Workers AI's shape.
export function workersAiReply(reply, jsonMode) {
  const text = reply?.choices?.[0]?.message?.content ?? "";
  let response = text;
  if (jsonMode) {
    try {
      response = JSON.parse(text);
    } catch {
      // not JSON (cut off by max_tokens): the text as the model wrote it
    }
  }
  const u = reply?.usage ?? {};
  const usage = {
    prompt_tokens: u.prompt_tokens ?? 0,
    completion_tokens: u.completion_tokens ?? 0,
    total_tokens: u.total_tokens ?? 0,
  };
  return { response, usage };
}

// A failed fetch to a supervised server that died meanwhile says how it died (the server
// restarts; the extractor retries a call that failed "temporarily").
async function callServer(server, base, body) {
  let exit = null;
  const unsubscribe = server.onExit?.((how) => {
    exit = how;
  });
  try {
    return await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch (err) {
    // The socket may close before the child's exit is reported: wait a moment for it.
    const deadline = Date.now() + EXIT_NOTICE_MS;
    while (exit === null && server.onExit && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const why = exit
      ? `llama-server ${exit} during the call (temporarily unavailable; the host restarts it)`
      : `llama-server unavailable: ${err.cause?.code ?? err.message}`;
    throw new Error(`${LOCAL_TEXT_MODEL}: ${why}`);
  } finally {
    unsubscribe?.();
  }
}

async function generate(server, inputs) {
  const base = await server.ready;
  const body = chatBody(inputs);
  const r = await callServer(server, base, body);
  const text = await r.text();
  if (!r.ok) {
    // Workers AI names an over-long prompt with error 3006; the extractor splits on it.
    const tooLong = /context size|context length|too long|exceed/i.test(text);
    const code = tooLong ? "3006: Request is too large" : `HTTP ${r.status}`;
    throw new Error(`${LOCAL_TEXT_MODEL}: ${code}: ${text.slice(0, 300)}`);
  }
  return workersAiReply(JSON.parse(text), Boolean(body.response_format));
}

// The AI binding, with the local text model answered by the server.
export function withLocalText(binding, server) {
  return new Proxy(binding, {
    get(target, prop) {
      if (prop !== "run") return Reflect.get(target, prop);
      const run = Reflect.get(target, prop);
      return async (model, inputs, options) => {
        if (model !== LOCAL_TEXT_MODEL) return run.call(target, model, inputs, options);
        if (!server.available) throw new Error(`${LOCAL_TEXT_MODEL}: ${server.why}`);
        return generate(server, inputs);
      };
    },
  });
}
