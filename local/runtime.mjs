// The pieces of workerd's runtime that the local host imitates for the Python SDK:
// binding objects with the class names the SDK recognises, an ExecutionContext, a
// ScheduledController, the `cloudflare:workers` module and the compat flags.

// The SDK (workers/rpc.py `_EnvWrapper`) only converts arguments and results for bindings whose
// JS `constructor.name` is in its allowlist; getPlatformProxy's objects all report "constructor".
// Each wrapper is a real class of the right name that forwards the binding's methods, so
// `env.ENTITIES.put(k, v, {"metadata": {...}})` from Python gets the SDK's conversions.
// The wrapped binding sits in a WeakMap rather than on the instance, so that Python sees
// exactly the binding's methods and nothing else.
const inner = new WeakMap();

function forwardingClass(className, methods) {
  const cls = {
    [className]: class {
      constructor(binding) {
        inner.set(this, binding);
      }
    },
  }[className];
  for (const method of methods) {
    Object.defineProperty(cls.prototype, method, {
      value: function (...args) {
        return inner.get(this)[method](...args);
      },
      writable: true,
      configurable: true,
    });
  }
  return cls;
}

export const KvNamespace = forwardingClass("KvNamespace", [
  "get",
  "put",
  "delete",
  "list",
]);
export const D1Database = forwardingClass("D1Database", [
  "prepare",
  "batch",
  "exec",
  "dump",
  "withSession",
]);

// A host-only fast path (adapters/workers.py `WorkersD1` uses it when present): Python hands
// the statements over once as JSON text, `[[sql, [params...]], ...]`, and gets the rows back
// as JSON text. Through the SDK every JS object Python receives is probed
// (`constructor.name`, `then`), and on the platform proxy each probe of a D1 statement is a
// synchronous round trip to workerd: 40-130 ms per prepare/bind from Python, against ~2 ms
// from here. workerd's real D1Database has no such method, so the adapter falls back to
// prepare/bind/batch from Python there, where statements are cheap native objects.
const STATEMENT_CACHE_SIZE = 64;
const prepared = new WeakMap(); // binding -> Map(sql -> prepared statement)

function statementOf(db, sql, params) {
  let cache = prepared.get(db);
  if (!cache) prepared.set(db, (cache = new Map()));
  let statement = cache.get(sql);
  if (!statement) {
    // D1's bind() returns a new statement and leaves this one unbound: safe to reuse.
    if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
    statement = db.prepare(sql);
    cache.set(sql, statement);
  }
  return params.length ? statement.bind(...params) : statement;
}

Object.defineProperties(D1Database.prototype, {
  // All rows of one statement: JSON text of `[{column: value}, ...]`.
  allJson: {
    value: async function (sql, paramsJson) {
      const db = inner.get(this);
      const result = await statementOf(db, sql, JSON.parse(paramsJson)).all();
      return JSON.stringify(result.results ?? []);
    },
  },
  // One transaction (D1's batch): JSON text of each statement's rows.
  batchJson: {
    value: async function (planJson) {
      const db = inner.get(this);
      const plan = JSON.parse(planJson);
      const results = await db.batch(plan.map(([sql, params]) => statementOf(db, sql, params)));
      return JSON.stringify(results.map((result) => result.results ?? []));
    },
  },
});
// Offline, every Ai method rejects with "Binding AI needs to be run remotely"; it stays
// present so code paths that probe for a model see the same shape as in production.
export const Ai = forwardingClass("Ai", ["run", "models", "gateway", "autorag", "toMarkdown"]);

// Present the platform proxy's env the way workerd would: vars as strings, bindings wrapped.
// `wrapAi` may stand in for parts of the AI binding (local/embeddings.mjs).
export function presentEnv(rawEnv, config, wrapAi = (binding) => binding) {
  const kinds = new Map();
  for (const kv of config.kv_namespaces ?? []) kinds.set(kv.binding, KvNamespace);
  for (const d1 of config.d1_databases ?? []) kinds.set(d1.binding, D1Database);
  if (config.ai?.binding) kinds.set(config.ai.binding, Ai);
  const env = {};
  for (const [name, value] of Object.entries(rawEnv)) {
    const Wrapper = kinds.get(name);
    const binding = Wrapper === Ai ? wrapAi(value) : value;
    env[name] = Wrapper ? new Wrapper(binding) : value;
  }
  return env;
}

// Background work handed to waitUntil, tracked so /__scheduled (and shutdown) can wait for it.
const pending = new Set();

// A Python awaitable passed to JS is a *borrowed* proxy, destroyed when the call returns; it
// must be copied synchronously to outlive the call (workerd's SDK helper does the same).
function keepUntilSettled(value, into) {
  const owned = typeof value?.copy === "function" ? value.copy() : value;
  const settled = (async () => {
    try {
      await owned;
    } catch (err) {
      console.error("[waitUntil] task failed:", err?.message ?? err);
    } finally {
      owned?.destroy?.();
    }
  })();
  for (const set of into) set.add(settled);
  settled.finally(() => {
    for (const set of into) set.delete(settled);
  });
}

export class ExecutionContext {
  #tasks = new Set();
  props = {};

  waitUntil(promise) {
    keepUntilSettled(promise, [this.#tasks, pending]);
  }

  // Nothing to pass through to on the local host: an exception becomes a 500 response.
  passThroughOnException() {}

  async settled() {
    while (this.#tasks.size) await Promise.allSettled([...this.#tasks]);
  }
}

export class ScheduledController {
  #noRetry = false;

  constructor(cron, scheduledTime) {
    this.cron = cron;
    this.scheduledTime = scheduledTime;
    this.type = "scheduled";
  }

  noRetry() {
    this.#noRetry = true;
  }

  get retryDisabled() {
    return this.#noRetry;
  }
}

export async function settleAll(timeoutMs) {
  const timeout = new Promise((resolve) => setTimeout(resolve, timeoutMs).unref());
  await Promise.race([Promise.allSettled([...pending]), timeout]);
}

// Compat flags the SDK reads, with the date workerd turns each on (from workerd's
// compatibility-date.capnp, 1.20260426); a flag in wrangler.toml overrides the date.
const COMPAT_FLAGS = {
  python_workflows_implicit_dependencies: {
    date: "2026-02-25",
    off: "no_python_workflows_implicit_dependencies",
  },
  python_request_headers_preserve_commas: {
    date: "2026-02-17",
    off: "disable_python_request_headers_preserve_commas",
  },
};

export function compatFlags(config) {
  const date = config.compatibility_date ?? "2000-01-01";
  const explicit = new Set(config.compatibility_flags ?? []);
  const flags = {};
  for (const [name, { date: since, off }] of Object.entries(COMPAT_FLAGS)) {
    flags[name] = explicit.has(name) || (date >= since && !explicit.has(off));
  }
  return flags;
}

// The JS module behind local/runtime/_pyodide_entrypoint_helper.py.
export function makeHostModule({ env, flags }) {
  const cloudflareWorkers = {
    env,
    waitUntil(promise) {
      keepUntilSettled(promise, [pending]);
    },
  };
  const cloudflareSockets = {
    connect() {
      throw new Error("cloudflare:sockets is not available on the local host");
    },
  };
  return {
    cloudflareWorkers,
    cloudflareSockets,
    compatFlags: flags,
    async doAnImport(name) {
      if (name === "cloudflare:workers") return cloudflareWorkers;
      if (name === "cloudflare:sockets") return cloudflareSockets;
      throw new Error(`the local host cannot import ${JSON.stringify(name)}`);
    },
    // Our ExecutionContext already keeps Python awaitables alive; other objects are left alone.
    patchWaitUntil() {},
    // `workers.patch_env`: set the given names on the shared env, return the undo.
    patchEnv(kwds) {
      const entries = kwds instanceof Map ? [...kwds] : Object.entries(kwds);
      const saved = entries.map(([key]) => [key, Object.hasOwn(env, key), env[key]]);
      for (const [key, value] of entries) env[key] = value;
      return () => {
        for (const [key, had, value] of saved.reverse()) {
          if (had) env[key] = value;
          else delete env[key];
        }
      };
    },
  };
}
