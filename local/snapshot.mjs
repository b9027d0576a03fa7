// Start Pyodide from a memory snapshot: what `loadPyodide` spends ~2.5 s on (instantiating
// the interpreter, importing its start-up modules) is restored from a file in ~0.5 s.
//
// What the snapshot holds: the interpreter right after `loadPyodide`, plus the standard-library
// modules the app imports (STDLIB_IMPORTS) and the pure-Python packages of the wheel set that
// do not need pydantic (PACKAGE_IMPORTS: Starlette, anyio, ...). Not the app, FastAPI or
// pydantic: pydantic-core is a compiled extension (a wasm side module loaded with dlopen), and
// npm pyodide cannot restore a snapshot taken with a side module loaded ("offset is out of
// bounds"; workerd preloads them, pyodide's loader does not). Nor src/: the app is imported
// after the restore, so an edit to src/ needs no new snapshot. The file name carries a hash of
// the Pyodide build, node's version, both lists and the caller's key (the wheel set); any
// other snapshot file is stale and removed.
//
// Seams: the snapshot fixes the interpreter's string-hash seed (as workerd's snapshots do); the
// `random` module's state is reseeded after every restore, so no two host runs share it.
// A snapshot that fails to restore is deleted and the host starts the slow way.

import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";

// Standard-library modules the app and its packages import (measured: the modules new in
// sys.modules after importing the app that live in Pyodide's stdlib). Importing them is safe
// to freeze: none opens a file, a socket or reads the clock at import.
const STDLIB_IMPORTS = [
  "datetime",
  "decimal",
  "email.message",
  "email.parser",
  "email.utils",
  "fractions",
  "hashlib",
  "hmac",
  "html",
  "http.client",
  "http.cookies",
  "importlib.metadata",
  "ipaddress",
  "mimetypes",
  "pickle",
  "shlex",
  "sqlite3",
  "unicodedata",
  "urllib.parse",
  "zoneinfo",
];

// Pure-Python packages of the wheel set (measured: ~0.4 s of the app's 1.6 s of imports).
const PACKAGE_IMPORTS = [
  "typing_extensions",
  "annotated_types",
  "idna",
  "anyio",
  "starlette.applications",
  "starlette.middleware.cors",
  "starlette.responses",
  "starlette.routing",
  "opentelemetry.trace",
];

const RESEED = `
import sys
if "random" in sys.modules:
    sys.modules["random"].seed()  # from os.urandom: the snapshot's state would repeat
`;

function snapshotName(version, key) {
  const imports = [...STDLIB_IMPORTS, ...PACKAGE_IMPORTS];
  const hash = createHash("sha256")
    .update(JSON.stringify({ version, node: process.version, imports, key }))
    .digest("hex")
    .slice(0, 16);
  return `snapshot-${hash}.bin`;
}

function removeStale(dir, keep) {
  for (const name of readdirSync(dir)) {
    // Another start-up's staging file of the current snapshot (`<keep>.tmp-<pid>`) stays.
    if (name.startsWith("snapshot-") && !name.startsWith(keep)) {
      rmSync(path.join(dir, name), { force: true });
    }
  }
}

// `loadPyodide(options)` from a snapshot in `cacheDir` when there is a good one; otherwise the
// slow way, making the snapshot for the next start. `prepare(pyodide)` must put the wheel set
// on sys.path (mounted where it is mounted after a restore) before the packages are imported;
// `key` names that wheel set. Returns [pyodide, how]: "restored", "made" (`prepare` ran) or
// "plain" (`prepare` ran; no snapshot was made).
export async function loadPyodideSnapshotted({
  loadPyodide,
  version,
  cacheDir,
  options,
  key,
  prepare,
}) {
  mkdirSync(cacheDir, { recursive: true });
  const name = snapshotName(version, key);
  const file = path.join(cacheDir, name);
  if (existsSync(file)) {
    try {
      const pyodide = await loadPyodide({ ...options, _loadSnapshot: readFileSync(file) });
      pyodide.runPython(RESEED);
      return [pyodide, "restored"];
    } catch (err) {
      console.error(`[snapshot] ${file} did not restore (${err?.message ?? err}); remaking it`);
      rmSync(file, { force: true });
    }
  }
  removeStale(cacheDir, name);
  const pyodide = await loadPyodide({ ...options, _makeSnapshot: true });
  prepare(pyodide);
  try {
    const imports = [...STDLIB_IMPORTS, ...PACKAGE_IMPORTS];
    pyodide.runPython(imports.map((module) => `import ${module}`).join("\n"));
    const snapshot = pyodide.makeMemorySnapshot();
    // Written aside and renamed, so a concurrent start-up never reads half a snapshot.
    const staging = `${file}.tmp-${process.pid}`;
    writeFileSync(staging, snapshot);
    renameSync(staging, file);
    return [pyodide, "made"];
  } catch (err) {
    console.error(`[snapshot] not made (${err?.message ?? err}); starting without one`);
    return [pyodide, "plain"];
  }
}
