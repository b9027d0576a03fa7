// Stops the host's children when the host dies, however it dies (kill -9 included).
//
// The host's children (Miniflare's workerd, the embedding model server) are not ours to
// spawn with options, and a SIGKILLed parent runs no exit handler: they would live on, on the
// same state files. This detached watcher polls the host's pid, keeps the list of its
// descendants (from /proc, with their start times so a reused pid is never hit), and when
// the host is gone SIGKILLs them. Linux only (the local host's platform); elsewhere it exits.
import { readdirSync, readFileSync } from "node:fs";

const host = Number(process.argv[2]);
const POLL_MS = 250;

function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: rest[0], ppid: Number(rest[1]), start: rest[19] };
  } catch {
    return null;
  }
}

function descendants(root) {
  const children = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(name);
    if (!s) continue;
    if (!children.has(s.ppid)) children.set(s.ppid, []);
    children.get(s.ppid).push({ pid: Number(name), start: s.start });
  }
  const out = [];
  const queue = [root];
  while (queue.length) {
    for (const child of children.get(queue.shift()) ?? []) {
      out.push(child);
      queue.push(child.pid);
    }
  }
  return out;
}

// A killed process stays a zombie until its parent reaps it: that is dead too.
function alive(pid) {
  const s = stat(pid);
  return s !== null && s.state !== "Z";
}

if (process.platform !== "linux" || !host) process.exit(0);
let known = [];
const timer = setInterval(() => {
  if (alive(host)) {
    known = descendants(host);
    return;
  }
  clearInterval(timer);
  for (const { pid, start } of known) {
    if (pid === process.pid) continue; // the watcher is the host's child too
    const now = stat(pid);
    if (now && now.start === start) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  process.exit(0);
}, POLL_MS);
