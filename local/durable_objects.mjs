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
// - stubs are plain objects with `fetch`, so Python never mistakes one for a promise.
// Not emulated: alarms, input/output gates, eviction after idleness, location hints.
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
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
    return {
      id,
      name: id.name,
      fetch: (input, init) => host.fetch(className, id, new Request(input, init)),
    };
  }
  getByName(name) {
    return this.get(this.idFromName(name));
  }
}

// The instances of every class, and how a request reaches one.
export class ObjectHost {
  #instances = new Map();
  constructor({ pyodide, dispatch, module, env, stateDir, pyStateDir, makeContext }) {
    this.pyodide = pyodide;
    this.dispatch = dispatch;
    this.module = module;
    this.env = env;
    this.stateDir = stateDir;
    this.pyStateDir = pyStateDir;
    this.makeContext = makeContext;
  }
  #instance(className, id) {
    const key = `${className}/${id.hex}`;
    let found = this.#instances.get(key);
    if (!found) {
      mkdirSync(path.join(this.stateDir, className), { recursive: true });
      const ctx = this.makeContext({
        id,
        storage: { sqlitePath: `${this.pyStateDir}/${className}/${id.hex}.sqlite` },
      });
      found = this.dispatch.make_object(this.module, className, ctx, this.env);
      this.#instances.set(key, found);
    }
    return found;
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
