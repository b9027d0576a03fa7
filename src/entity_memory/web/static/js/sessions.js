import { api, userPath } from "./api.js";
import { entityHref, fmtDate, fmtValue, h, page, section, tableWrap, typeBadge } from "./dom.js";

// --- sessions: what each one wrote, what its extraction refused and why -----------------------
function sessionHref(id) {
  return "#/session/" + encodeURIComponent(id);
}

// A job's state, as a reader scans it: how far it got, or why it stopped.
function jobProgress(j) {
  if (j.state === "failed") return j.error ? j.error.code + ": " + j.error.message : "failed";
  const chunks = j.chunksDone + " of " + j.chunksTotal + " chunks";
  return j.pending ? chunks + "; some messages wait for an LLM retry" : chunks;
}

function jobsSection(jobs) {
  const rows = jobs.map((j) => h("tr", {},
    h("td", {}, h("a", { href: sessionHref(j.sessionId) }, j.sessionId)),
    h("td", {}, h("span", { class: "badge job-" + j.state }, j.state)),
    h("td", {}, jobProgress(j)),
    h("td", { class: "num" }, j.messages),
    h("td", {}, j.extractor || "—"),
    h("td", {}, fmtDate(j.createdAt)),
    h("td", {}, fmtDate(j.updatedAt))));
  return section("Extraction jobs", jobs.length
    ? tableWrap("Extraction jobs",
      ["Session", "State", "Progress", "Messages", "Extractor", "Queued", "Updated"], rows)
    : h("p", { class: "empty" }, "No extraction job is recorded for this user."),
  h("p", { class: "help" }, "An extraction runs as a job in the user's writer: queued, then " +
    "running chunk by chunk, then done or failed. Finished jobs are kept for a while."));
}

export async function sessionsPage() {
  const [body, jobs] = await Promise.all([
    api("GET", userPath("/sessions")), api("GET", userPath("/jobs"))]);
  const rows = body.sessions.map((s) => h("tr", {},
    h("td", {}, h("a", { href: sessionHref(s.sessionId) }, s.sessionId)),
    h("td", {}, fmtDate(s.processedAt)),
    h("td", { class: "num" }, s.counts.messages ?? "—"),
    h("td", { class: "num" }, s.counts.candidates ?? "—"),
    h("td", { class: "num" }, s.counts.rejected ?? "—")));
  page("Sessions", jobsSection(jobs.jobs), body.sessions.length
    ? section("Extracted sessions", tableWrap("Sessions",
      ["Session", "Processed", "Messages", "Candidates", "Rejected"], rows))
    : h("p", { class: "empty" }, "No session was extracted for this user yet."),
  h("p", { class: "help" }, "Sessions written directly (PUT) have no extraction; open one " +
    "by its id: #/session/<id>."));
}

export async function sessionPage(id) {
  const s = await api("GET", userPath("/sessions/" + encodeURIComponent(id)));
  const written = s.extracted.map((w) => h("tr", {},
    h("td", {}, w.changeKind === "deleted" ? w.name : h("a", { href: entityHref(w.type, w.id) },
      w.name)),
    h("td", {}, typeBadge(w.type)),
    h("td", {}, w.changeKind), h("td", { class: "num" }, "v" + w.version),
    h("td", {}, Object.keys(w.changes || {}).join(", ") || "—")));
  const refused = s.rejected.map((r) => h("tr", {},
    h("td", {}, r.name || "—"), h("td", {}, r.entityType ? typeBadge(r.entityType) : "—"),
    h("td", {}, r.code ? h("code", {}, r.code) : "—"), h("td", { class: "value" }, r.reason),
    h("td", {}, r.extractor)));
  const counts = Object.entries(s.counts || {}).map(([k, v]) => k + " " + fmtValue(v)).join(", ");
  page("Session " + id,
    h("p", { class: "subtitle" }, s.processedAt ? "Extracted " + fmtDate(s.processedAt) +
      (counts ? " · " + counts : "") : "Written directly, not extracted."),
    section("Extracted", written.length
      ? tableWrap("Written", ["Entity", "Type", "Change", "Version", "Fields"], written)
      : h("p", { class: "empty" }, "Nothing was stored from this session.")),
    section("Rejected", refused.length
      ? tableWrap("Rejected", ["Candidate", "Type", "Code", "Reason", "Extractor"], refused)
      : h("p", { class: "empty" }, "Nothing was rejected.")));
}
