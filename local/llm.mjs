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

import { freePort, waitReady } from "./child_server.mjs";

export const LOCAL_TEXT_MODEL = "local/qwen2.5-coder-1.5b-instruct";
// Loading 1.1 GB from the page cache takes seconds; from a cold disk on a busy machine, more.
const READY_TIMEOUT_MS = 180_000;
// The server's window: a chunk of a session, its context and the reply fit (catalog.py
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
  const { model, server } = JSON.parse(readFileSync(file, "utf8"));
  for (const p of [model, server]) if (!existsSync(p)) return { missing: `${p} not found` };
  return { model, server };
}

function unavailable(why) {
  const ready = Promise.reject(new Error(why));
  ready.catch(() => {});
  return { available: false, why, ready, stop() {} };
}

// The text model server: `{available, why, ready: Promise<baseUrl>, stop}`.
export function startTextServer({ disabled = false, url = "" } = {}) {
  if (disabled) return unavailable("the local LLM is off (--no-llm)");
  if (url) return { available: true, why: `using ${url}`, ready: Promise.resolve(url), stop() {} };
  const found = installed();
  if (found.missing) return unavailable(`no local LLM: ${found.missing}`);
  let child = null;
  const ready = (async () => {
    const port = await freePort();
    const threads = String(Math.max(1, os.availableParallelism?.() ?? os.cpus().length));
    const args = ["-m", found.model, "--host", "127.0.0.1", "--port", String(port)];
    args.push("-c", String(CONTEXT_TOKENS), "-t", threads, "--parallel", "1", "--no-webui");
    child = spawn(found.server, args, { stdio: ["ignore", "ignore", "ignore"] });
    const base = `http://127.0.0.1:${port}`;
    await waitReady(`${base}/health`, child, "llama-server", READY_TIMEOUT_MS);
    return base;
  })();
  ready.catch(() => {});
  const stop = () => child?.kill("SIGTERM");
  process.once("exit", stop);
  return { available: true, why: `llama-server on ${path.basename(found.model)}`, ready, stop };
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

async function generate(server, inputs) {
  const base = await server.ready;
  const body = chatBody(inputs);
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
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
