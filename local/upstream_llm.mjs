// Production's text model, answered locally by an OpenAI-compatible server named at start.
//
// The host's own model (local/llm.mjs) answers only its own id, whose design asks a 1.5B model
// for campaigns only, so the code production runs on Workers AI's default model (its design,
// schema dialect, reasoning-model handling, reply parsing) would never run here. With
// `--text-upstream URL` (or ENTITY_MEMORY_TEXT_UPSTREAM=URL; URL is an OpenAI-compatible `/v1`
// base, e.g. ../shared/eval/capable-model/replay.py or relay.py), `AI.run(<@cf/... text
// model>, inputs)` is sent to `URL/chat/completions` and answered in the reply shape Workers AI
// documents for that model:
// - models whose page documents the OpenAI chat-completion output (@cf/zai-org/glm-4.7-flash:
//   `{id, object: "chat.completion", created, model, choices: [{index, message: {role,
//   content, reasoning_content?}, finish_reason}], usage}`; a reasoning model's thinking comes
//   as `message.reasoning_content` and its answer may be null when the thinking used up
//   `max_tokens`) get that shape, with the upstream's message, reasoning and finish reason;
// - every other text model gets the classic `{response, usage}` (llm.mjs's `workersAiReply`).
// The upstream's answer is passed on as it is: nothing is made up, a failure is an error whose
// message carries what the extractor reads (HTTP status, "3006" for a prompt too long,
// "upstream" for a server that cannot be reached, which Workers AI callers retry).
// Embedding models and the local model's id never come here.
import http from "node:http";
import https from "node:https";
import { chatBody, workersAiReply } from "./llm.mjs";

// Workers AI text models whose documented output is the OpenAI chat completion
// (developers.cloudflare.com/workers-ai/models/glm-4.7-flash/, "Output").
const CHAT_COMPLETION_MODELS = new Set(["@cf/zai-org/glm-4.7-flash"]);
// Inputs of those models that an OpenAI-compatible server takes under the same name.
const PASSED_THROUGH = ["max_completion_tokens", "reasoning_effort", "chat_template_kwargs"];

// The upstream named at start: `{available, why, url}`.
export function textUpstream(url = "") {
  const base = String(url).trim().replace(/\/+$/, "");
  if (!base) return { available: false, why: "no text upstream", url: "" };
  return { available: true, why: `production text models from ${base}`, url: base };
}

function isTextGeneration(model, inputs) {
  const asksText = Array.isArray(inputs?.messages) || typeof inputs?.prompt === "string";
  return String(model).startsWith("@cf/") && asksText;
}

export function upstreamBody(model, inputs) {
  const body = { model, ...chatBody(inputs) };
  for (const key of PASSED_THROUGH) if (inputs?.[key] !== undefined) body[key] = inputs[key];
  return body;
}

// An OpenAI chat completion from the upstream, in the shape Workers AI gives for `model`.
export function chatCompletionReply(model, reply) {
  const choice = reply?.choices?.[0] ?? {};
  const said = choice.message ?? {};
  const message = {
    role: "assistant",
    content: said.content ?? null,
    refusal: said.refusal ?? null,
  };
  // OpenAI-compatible servers name a reasoning model's thinking `reasoning_content` (vLLM,
  // llama.cpp) or `reasoning`; Workers AI returns it as `reasoning_content`.
  const reasoning = said.reasoning_content ?? said.reasoning;
  if (reasoning != null) message.reasoning_content = reasoning;
  const u = reply?.usage ?? {};
  const prompt = u.prompt_tokens ?? 0;
  const completion = u.completion_tokens ?? 0;
  return {
    id: reply?.id ?? "chatcmpl-local",
    object: "chat.completion",
    created: reply?.created ?? Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, finish_reason: choice.finish_reason ?? "stop", logprobs: null }],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: u.total_tokens ?? prompt + completion,
    },
  };
}

function failure(model, status, text) {
  // Workers AI names an over-long prompt with error 3006; the extractor splits the chunk on it.
  const tooLong = /context size|context length|too long|too large|exceed/i.test(text);
  const code = tooLong ? "3006: Request is too large" : `HTTP ${status}`;
  return new Error(`${model}: ${code}: ${text.slice(0, 300)}`);
}

// POST a JSON body; resolves to `{status, text}`. Not `fetch`: Node's fetch gives up on an
// answer whose headers take over 300 s (undici's headersTimeout), and a live run's upstream
// (relay.py, answered by hand) takes longer; how long to wait is the extractor's to say
// (AI_TIMEOUT_S, which the Python side enforces).
function postJson(url, body) {
  const raw = Buffer.from(JSON.stringify(body));
  const client = url.startsWith("https:") ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": raw.length },
    });
    req.on("response", (res) => {
      const parts = [];
      res.on("data", (part) => parts.push(part));
      res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(parts).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(raw);
  });
}

async function generate(upstream, model, inputs) {
  const body = upstreamBody(model, inputs);
  let r;
  try {
    r = await postJson(`${upstream.url}/chat/completions`, body);
  } catch (err) {
    const why = err?.cause?.message ?? err?.message;
    throw new Error(`${model}: upstream ${upstream.url} unreachable: ${why}`);
  }
  const text = r.text;
  if (r.status < 200 || r.status > 299) throw failure(model, r.status, text);
  const reply = JSON.parse(text);
  if (CHAT_COMPLETION_MODELS.has(model)) return chatCompletionReply(model, reply);
  return workersAiReply(reply, Boolean(body.response_format));
}

// The AI binding, with production's text models answered by the upstream.
export function withUpstreamText(binding, upstream) {
  if (!upstream.available) return binding;
  return new Proxy(binding, {
    get(target, prop) {
      if (prop !== "run") return Reflect.get(target, prop);
      const run = Reflect.get(target, prop);
      return async (model, inputs, options) => {
        if (!isTextGeneration(model, inputs)) return run.call(target, model, inputs, options);
        return generate(upstream, model, inputs);
      };
    },
  });
}
