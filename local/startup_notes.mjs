// Start-up warnings of wrangler and workerd that are false on this host, replaced by one line
// each that says what is true. Everything else they print passes through unchanged.
//
// - wrangler: "bindings to the following internal Durable Objects ... will not work in local
//   development", and workerd: "no such Durable Object class is exported from the worker".
//   Both are about wrangler's platform proxy, which indeed cannot run the Worker's own
//   UserWriter class; this host does not ask it to: it provides USER_WRITER itself
//   (durable_objects.mjs), so every write runs in the user's object as deployed.
// - wrangler: "AI bindings always access remote resources": not here; remote bindings are off
//   and the host answers the AI binding with local models (embeddings.mjs, llm.mjs).

const NOTES = [
  {
    match: /internal Durable Objects|no such Durable Object class is exported/,
    note:
      "local host: USER_WRITER (UserWriter) runs in this host (local/durable_objects.mjs), not " +
      "in wrangler's proxy, so wrangler's and workerd's Durable Object warnings do not apply",
  },
  {
    match: /AI bindings always access remote resources/,
    note: "local host: the AI binding is answered on this machine (local models), never remotely",
  },
];

// A warning spans several lines (wrangler's box) and may arrive in pieces: a chunk that
// starts one of them, and what follows until a blank line, is dropped.
const CONTINUATION = /^\s*(- \{"name"|These will not work|If you want to develop|For detailed|$)/;

export function explainStartupWarnings(stream = process.stderr) {
  const write = stream.write.bind(stream);
  const said = new Set();
  let dropping = false;
  stream.write = (chunk, ...rest) => {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    const kept = [];
    for (const line of text.split("\n")) {
      const plain = line.replace(/\x1b\[[0-9;]*m/g, "");
      const hit = NOTES.find((n) => n.match.test(plain));
      if (hit) {
        dropping = true;
        if (!said.has(hit.note)) {
          said.add(hit.note);
          kept.push(hit.note);
        }
        continue;
      }
      if (dropping && CONTINUATION.test(plain)) continue;
      if (!plain.trim() && kept.length && NOTES.some((n) => n.note === kept.at(-1))) continue;
      dropping = false;
      kept.push(line);
    }
    let out = kept.join("\n");
    if (!out.trim()) {
      const done = rest.find((r) => typeof r === "function");
      if (done) done();
      return true;
    }
    if (!out.endsWith("\n")) out += "\n"; // a note replaced the chunk's last line
    return write(out, ...rest.filter((r) => typeof r !== "string"));
  };
}
