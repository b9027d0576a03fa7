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
// Every KV call the Worker made since the host started, by method (GET /__kv-operations).
// Extraction jobs run in the user's writer, in its alarm, outside any request, so no
// response's X-KV-Operations header carries what they cost; a bench reads this instead.
export const kvOperations = { get: 0, put: 0, delete: 0, list: 0 };
for (const method of Object.keys(kvOperations)) {
  const forward = KvNamespace.prototype[method];
  Object.defineProperty(KvNamespace.prototype, method, {
    value: function (...args) {
      kvOperations[method] += 1;
      return forward.apply(this, args);
    },
    writable: true,
    configurable: true,
  });
}
export const D1Database = forwardingClass("D1Database", [
  "prepare",
  "batch",
  "exec",
  "dump",
  "withSession",
]);

// Host-only: a whole batch of statements as one JSON string, `[[sql, [params...]], ...]`, run
// with one call; the result is JSON too, `[[row, ...], ...]` per statement. Statements built
// from Python cost 40-130 ms per prepare/bind (the SDK's conversions, then getPlatformProxy's
// proxy), and even from here each prepare/bind is a synchronous round trip to workerd
// (~3-6 ms). But workerd's D1 `batch` reads only `statement` and `params` of each statement,
// so plain objects with the values `bind` would have checked and converted do the same in one
// round trip. workerd's real binding has no such method: src/adapters/workers.py uses it only
// where it exists (see `WorkersD1`), and production keeps prepare/bind/batch.
export const D1_HOST_BATCH = "hostBatchJson";

// What D1PreparedStatement.bind accepts and how it converts it (workerd's d1-api).
function d1Value(value) {
  if (value === null || typeof value === "number" || typeof value === "string") return value;
  if (typeof value === "boolean") return value ? 1 : 0;
  throw new Error(`D1_TYPE_ERROR: Type '${typeof value}' not supported for value '${value}'`);
}

Object.defineProperty(D1Database.prototype, D1_HOST_BATCH, {
  value: async function (statementsJson) {
    const statements = JSON.parse(statementsJson).map(([statement, params]) => ({
      statement,
      params: params.map(d1Value),
    }));
    const results = await inner.get(this).batch(statements);
    return JSON.stringify(results.map((result) => result.results ?? []));
  },
  writable: true,
  configurable: true,
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
