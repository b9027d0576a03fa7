// An optional event-loop lag monitor: `ENTITY_MEMORY_LOOP_LAG_MS=N` prints to stderr every
// stretch of N ms or more in which the host's one event loop (the Worker's requests, the
// Durable Objects' calls and alarms, all in one Pyodide) did not turn, with what was in
// flight meanwhile. Off (no timer, no bookkeeping) when unset: a measuring instrument for
// bench.hostile_text and the like, not a production path.

const TICK_MS = 5;

export function startLoopLagMonitor(env = process.env) {
  const over = Number(env.ENTITY_MEMORY_LOOP_LAG_MS ?? 0);
  if (!(over > 0)) return { track: (_label, promise) => promise };
  const inFlight = new Map();
  let nextId = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const held = now - last - TICK_MS;
    if (held >= over) {
      const doing = [...new Set(inFlight.values())].join(", ") || "nothing in flight";
      console.error(`[loop] held ${Math.round(held)} ms (in flight: ${doing})`);
    }
    last = now;
  }, TICK_MS);
  timer.unref();
  return {
    // `promise`, with `label` listed as in flight until it settles.
    track(label, promise) {
      const id = nextId++;
      inFlight.set(id, label);
      return Promise.resolve(promise).finally(() => inFlight.delete(id));
    },
  };
}
