// What the host's model servers share: a free port, and waiting until a child answers.
import net from "node:net";
import os from "node:os";

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// Poll `probeUrl` until it answers 2xx, the child exits or is killed, or `timeoutMs` passes.
export async function waitReady(probeUrl, child, name, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // Killed by a signal (SIGILL on an instruction this CPU lacks) leaves exitCode null.
    if (child.signalCode !== null) throw new Error(`${name} was killed by ${child.signalCode}`);
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode})`);
    try {
      const r = await fetch(probeUrl);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} did not answer in ${Math.round(timeoutMs / 1000)} s`);
}

// Threads for a model server: the cores idle when the host starts, at least one; `forced` (a
// positive integer, from an env var) overrides. ggml's threads wait for each other at every
// step, so a thread the machine cannot run at once slows all of them.
export function idleThreads(forced) {
  const n = Number.parseInt(forced ?? "", 10);
  if (n > 0) return n;
  const cores = os.availableParallelism();
  return Math.max(1, Math.min(cores, Math.floor(cores - os.loadavg()[0] + 0.5)));
}
