// Durable Objects on the local host: the binding workerd would give, with its semantics.
//
// getPlatformProxy() cannot run a Durable Object class of the Worker itself (its stub answers
// "no such actor class"), so the host provides the namespace: a JS class named
// `DurableObjectNamespace` (the SDK's env wrapper recognises that name) with idFromName /
// idFromString / newUniqueId / get / getByName. Semantics kept:
// - one live instance per id, created on first use with (ctx, env) and kept while the host
//   runs; requests to one id reach that instance (its own code decides how they interleave,
//   as in workerd, where awaits let requests interleave too);
// - storage persisted under the state directory, one SQLite file per object
//   (`<persist>/do/<class>/<id>.sqlite`), handed to the object as `ctx.storage.sqlitePath`
//   instead of `ctx.storage.sql` (the seam: Python's sqlite3 in place of the platform's SQL
//   API; adapters/durable_object.py picks by what it is given);
// - stubs are plain objects with `fetch` and one function per RPC method of the class (its
//   public methods, listed by Python), so Python never mistakes one for a promise (no `then`);
//   `await stub.upsert(json)` reaches the instance's `upsert` as workerd's RPC would.
// - alarms: `ctx.storage.setAlarm(ms)` / `getAlarm()` / `deleteAlarm()`; at that time the
//   instance's `alarm()` runs. Persisted next to the object's storage (`<id>.alarm`), so an
//   alarm set before a restart still fires after it.
// Not emulated: input/output gates, eviction after idleness, location hints, alarm retries.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

export class DurableObjectId {
  constructor(hex, name) {
    this.hex = hex;
    this.name = name;
  }
  toString() {
    return this.hex;
  }
  equals(other) {
    return other instanceof DurableObjectId && other.hex === this.hex;
  }
}

export class DurableObjectNamespace {
  #className;
  #host;
  constructor(className, host) {
    this.#className = className;
    this.#host = host;
  }
  idFromName(name) {
    const hex = createHash("sha256").update(`${this.#className}:${name}`).digest("hex");
    return new DurableObjectId(hex, String(name));
  }
  idFromString(hex) {
    if (!/^[0-9a-f]{64}$/.test(String(hex))) throw new TypeError("Invalid Durable Object ID");
    return new DurableObjectId(String(hex), undefined);
  }
  newUniqueId() {
    return new DurableObjectId(createHash("sha256").update(crypto.randomUUID()).digest("hex"));
  }
  get(id) {
    const host = this.#host;
    const className = this.#className;
    const stub = {
      id,
      name: id.name,
      fetch: (input, init) => host.fetch(className, id, new Request(input, init)),
    };
    // RPC: one function per public method of the class, as workerd's stub offers; the call
    // reaches the one live instance of this id, its arguments and result converted as in
    // workerd (python_from_rpc / python_to_rpc). An exception in the method rejects the call.
    for (const method of host.methods(className)) {
      stub[method] = (...args) => host.call(className, id, method, args);
    }
    return stub;
  }
  getByName(name) {
    return this.get(this.idFromName(name));
  }
}

// The instances of every class, and how a request reaches one.
export class ObjectHost {
  #instances = new Map();
  #timers = new Map();
  constructor({ pyodide, dispatch, module, env, stateDir, pyStateDir, makeContext, track }) {
    this.pyodide = pyodide;
    // Lists a call as in flight while it runs (local/loop_lag.mjs); by default, nothing.
    this.track = track ?? ((_label, promise) => promise);
    this.dispatch = dispatch;
    this.module = module;
    this.env = env;
    this.stateDir = stateDir;
    this.pyStateDir = pyStateDir;
    this.makeContext = makeContext;
  }
  // Alarms set before this host started (their objects are created when they fire).
  restoreAlarms() {
    for (const className of existsSync(this.stateDir) ? readdirSync(this.stateDir) : []) {
      const dir = path.join(this.stateDir, className);
      for (const file of readdirSync(dir).filter((f) => f.endsWith(".alarm"))) {
        const id = new DurableObjectId(file.slice(0, -".alarm".length));
        this.#arm(className, id, Number(readFileSync(path.join(dir, file), "utf8")));
      }
    }
  }
  #alarmFile(className, id) {
    return path.join(this.stateDir, className, `${id.hex}.alarm`);
  }
  #arm(className, id, at) {
    const key = `${className}/${id.hex}`;
    clearTimeout(this.#timers.get(key));
    const timer = setTimeout(() => this.#ring(className, id), Math.max(0, at - Date.now()));
    timer.unref();
    this.#timers.set(key, timer);
  }
  async #ring(className, id) {
    this.#timers.delete(`${className}/${id.hex}`);
    rmSync(this.#alarmFile(className, id), { force: true });
    try {
      const ringing = this.dispatch.call_object_alarm(this.#instance(className, id));
      await this.track(`${className}.alarm()`, ringing);
    } catch (err) {
      console.error(`[alarm] ${className} ${id.hex}:`, err?.message ?? err);
    }
  }
  #storage(className, id) {
    const file = this.#alarmFile(className, id);
    return {
      sqlitePath: `${this.pyStateDir}/${className}/${id.hex}.sqlite`,
      setAlarm: async (at) => {
        const when = Number(at instanceof Date ? at.getTime() : at);
        writeFileSync(file, String(when));
        this.#arm(className, id, when);
      },
      getAlarm: async () => (existsSync(file) ? Number(readFileSync(file, "utf8")) : null),
      deleteAlarm: async () => {
        clearTimeout(this.#timers.get(`${className}/${id.hex}`));
        rmSync(file, { force: true });
      },
    };
  }
  #instance(className, id) {
    const key = `${className}/${id.hex}`;
    let found = this.#instances.get(key);
    if (!found) {
      mkdirSync(path.join(this.stateDir, className), { recursive: true });
      const ctx = this.makeContext({ id, storage: this.#storage(className, id) });
      found = this.dispatch.make_object(this.module, className, ctx, this.env);
      this.#instances.set(key, found);
    }
    return found;
  }
  #methods = new Map();
  // The RPC methods of a class, asked of Python once per class.
  methods(className) {
    if (!this.#methods.has(className)) {
      const names = this.dispatch.object_methods(this.module, className);
      this.#methods.set(className, names.toJs());
      names.destroy();
    }
    return this.#methods.get(className);
  }
  async call(className, id, method, args) {
    const instance = this.#instance(className, id);
    const label = `${className}.${method}(${typeof args[0] === "string" ? args[0] : ""})`;
    return await this.track(label, this.dispatch.call_object_method(instance, method, args));
  }
  async fetch(className, id, request) {
    const instance = this.#instance(className, id);
    return await this.dispatch.call_object_fetch(instance, request);
  }
}

// The namespaces wrangler.toml declares for classes of this Worker.
export function durableObjectNamespaces(config, host) {
  const out = {};
  for (const binding of config.durable_objects?.bindings ?? []) {
    if (binding.script_name) continue; // another Worker's class: not this host's to run
    out[binding.name] = new DurableObjectNamespace(binding.class_name, host);
  }
  return out;
}
