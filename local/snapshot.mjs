// Start Pyodide from a memory snapshot: what `loadPyodide` spends ~2.5 s on (instantiating
// the interpreter, importing its start-up modules) is restored from a file in ~0.5 s.
//
// What the snapshot holds: the interpreter right after `loadPyodide`, plus the standard-library
// modules the app imports (SNAPSHOT_IMPORTS). Not the app, FastAPI or pydantic: pydantic-core
// is a compiled extension (a wasm side module loaded with dlopen), and npm pyodide cannot
// restore a snapshot taken with a side module loaded ("offset is out of bounds"; workerd
// preloads them, pyodide's loader does not). So the snapshot depends only on the Pyodide build
// and the list below, not on src/ or the wheel set: its file name carries a hash of both (and
// of node's version), and any other snapshot file is stale and removed.
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
const SNAPSHOT_IMPORTS = [
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

const RESEED = `
import sys
if "random" in sys.modules:
    sys.modules["random"].seed()  # from os.urandom: the snapshot's state would repeat
`;

function snapshotName(version) {
  const key = createHash("sha256")
    .update(JSON.stringify({ version, node: process.version, imports: SNAPSHOT_IMPORTS }))
    .digest("hex")
    .slice(0, 16);
  return `snapshot-${key}.bin`;
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
// slow way, making the snapshot for the next start. Returns [pyodide, how] ("restored",
// "made" or "plain").
export async function loadPyodideSnapshotted({ loadPyodide, version, cacheDir, options }) {
  mkdirSync(cacheDir, { recursive: true });
  const name = snapshotName(version);
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
  try {
    pyodide.runPython(SNAPSHOT_IMPORTS.map((module) => `import ${module}`).join("\n"));
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
