"""The inspector's script: one ES module, plain DOM, only the public /v1 API.

Every stored string reaches the page through `textContent` or `setAttribute` (the `h()`
helper below), never through `innerHTML`: memory is written by agents from conversations and
must be treated as data. A Python constant, so the Worker ships it without a bundler or rules.
The entity, changes and forget pages and the router are in `script_pages.py`.
"""

from entity_memory.web.script_pages import PAGES_JS

_CORE = r"""// entity-memory inspector. Stored text is data: textContent, never innerHTML.
const TYPES = ["campaign", "metric", "decision", "pain_point", "preference"];
const TYPE_LABEL = {
  campaign: "Campaigns", metric: "Metrics", decision: "Decisions",
  pain_point: "Pain points", preference: "Preferences",
};
const EDIT_SESSION = "inspector-edit";
const HIDDEN_META = new Set(["history", "provenance"]);
// Metadata that is a mapping even when unset: not editable as one value.
const MAPPING_META = new Set(["lastPerformance"]);
const state = {
  token: sessionStorage.getItem("em.token") || "",
  user: sessionStorage.getItem("em.user") || "",
};
const main = document.getElementById("main");
const statusBox = document.getElementById("status");

// --- DOM helpers ------------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    // Through the CSSOM: the CSP forbids style attributes.
    else if (key === "style") Object.assign(el.style, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}
const SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
  for (const child of children) el.append(child instanceof Node ? child : String(child));
  return el;
}
function fmtDate(ms) {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}
function fmtValue(value) {
  if (value === null || value === undefined || value === "") return "—";
  if (Array.isArray(value)) return value.length ? value.map(fmtValue).join(", ") : "—";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}
function humanize(key) {
  if (key === "kpi") return "KPI";
  const words = key.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/_/g, " ").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
function fmtNum(n, digits = 2) {
  return typeof n === "number" ? String(Number(n.toFixed(digits))) : fmtValue(n);
}
function typeBadge(type) {
  return h("span", { class: "badge type-" + type }, (TYPE_LABEL[type] || type).replace(/s$/, ""));
}
function say(message, kind = "info") {
  statusBox.replaceChildren();
  if (!message) return;
  statusBox.append(h("p", { class: "notice " + kind, role: kind === "error" ? "alert" : null },
    message));
}
// A message for the page a navigation is about to show (the hash change clears the old one).
let pending = { message: "", kind: "info" };
function sayNext(message, kind = "info") {
  pending = { message, kind };
}
function page(title, ...children) {
  document.title = title + " · entity-memory";
  main.replaceChildren(h("h1", { tabindex: "-1", id: "page-title" }, title), ...children);
  document.getElementById("page-title").focus({ preventScroll: true });
}
function section(title, ...children) {
  return h("section", { class: "card", "aria-label": title }, h("h2", {}, title), ...children);
}
function entityHref(type, id) {
  return "#/entity/" + encodeURIComponent(type) + "/" + encodeURIComponent(id);
}

// --- API ------------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}
async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (state.token) headers.Authorization = "Bearer " + state.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, "network", "Could not reach the service (" + err.message + ").");
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!res.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(res.status, e.code || "http_" + res.status,
      e.message || res.statusText, e.details);
  }
  return data;
}
function userPath(rest) {
  return "/v1/users/" + encodeURIComponent(state.user) + (rest || "");
}
function explain(err) {
  if (!(err instanceof ApiError)) return String(err);
  if (err.status === 401) return "The token was refused (401 unauthorized). Sign in again.";
  if (err.status === 403) return "This token may not access user " + state.user + " (403).";
  let text = err.message + " [" + err.code + "]";
  if (Array.isArray(err.details)) {
    text += ": " + err.details.map((d) => (d.loc || []).join(".") + " " + d.msg).join("; ");
  }
  return text;
}

// --- layout -----------------------------------------------------------------------------------
function renderNav() {
  const nav = document.getElementById("nav");
  nav.replaceChildren();
  if (!state.user) return;
  const here = location.hash.split("?")[0];
  const link = (href, label) => h("a", {
    href, "aria-current": here.startsWith(href.split("?")[0]) ? "page" : null,
  }, label);
  nav.append(
    link("#/entities", "Entities"), link("#/changes", "Changes"), link("#/forget", "Forget user"),
    h("span", { class: "who" }, "User ", h("strong", {}, state.user)),
    h("button", { type: "button", class: "link", onclick: () => signOut() }, "Sign out"),
  );
}
function signOut(message = "Signed out.", kind = "info") {
  state.token = "";
  state.user = "";
  sessionStorage.removeItem("em.token");
  sessionStorage.removeItem("em.user");
  sayNext(message, kind);
  location.hash = "#/signin";
}

// --- pages ------------------------------------------------------------------------------------
function signInPage() {
  const user = h("input", {
    id: "user", name: "user", required: true, autocomplete: "username",
    value: state.user, pattern: "[A-Za-z0-9._@+\\-]+", spellcheck: "false",
  });
  const token = h("input", {
    id: "token", name: "token", type: "password", autocomplete: "current-password",
    "aria-describedby": "token-help",
  });
  const form = h("form", { class: "card narrow", onsubmit: onSubmit },
    h("label", { for: "user" }, "User id"), user,
    h("label", { for: "token" }, "Token"), token,
    h("p", { id: "token-help", class: "help" },
      "The admin token (API_TOKEN) or a token minted for this user. Leave empty when the " +
      "service runs without API_TOKEN. Kept in this tab's session storage only."),
    h("button", { type: "submit" }, "Sign in"));
  async function onSubmit(event) {
    event.preventDefault();
    state.user = user.value.trim();
    state.token = token.value.trim();
    try {
      await api("GET", userPath("/entities"));
    } catch (err) {
      say(explain(err), "error");
      return;
    }
    sessionStorage.setItem("em.user", state.user);
    sessionStorage.setItem("em.token", state.token);
    sayNext("Signed in as " + state.user + ".");
    location.hash = "#/entities";
  }
  page("Sign in", h("p", { class: "lead" },
    "Inspect and steer what entity-memory remembers about one user."), form);
  user.focus();
}

function typeTabs(active, counts, query) {
  const q = query ? "&q=" + encodeURIComponent(query) : "";
  const tab = (type, label) => h("a", {
    class: "tab", href: "#/entities?type=" + type + q,
    "aria-current": (active || "all") === type ? "page" : null,
  }, label + (counts ? " (" + (counts[type] || 0) + ")" : ""));
  return h("nav", { class: "tabs", "aria-label": "Entity types" },
    tab("all", "All"), TYPES.map((t) => tab(t, TYPE_LABEL[t])));
}

function searchForm(type, query) {
  const input = h("input", {
    id: "q", type: "search", name: "q", value: query || "",
    placeholder: "e.g. budget of the brand campaign", "aria-describedby": "q-help",
  });
  return h("form", {
    class: "search", role: "search",
    onsubmit: (event) => {
      event.preventDefault();
      const q = input.value.trim();
      const tail = q ? "&q=" + encodeURIComponent(q) : "";
      location.hash = "#/entities?type=" + (type || "all") + tail;
    },
  },
  h("label", { for: "q" }, "Search"),
  h("div", { class: "row" }, input, h("button", { type: "submit" }, "Search"),
    query ? h("a", { class: "button secondary", href: "#/entities?type=" + (type || "all") },
      "Clear") : null),
  h("p", { id: "q-help", class: "help" },
    "Ranked as the context route ranks them for a task, with the signals behind each score."));
}

async function entitiesPage(params) {
  const type = TYPES.includes(params.get("type")) ? params.get("type") : null;
  const query = (params.get("q") || "").trim();
  const listing = await api("GET", userPath("/entities"));
  const counts = { all: listing.count };
  for (const e of listing.entities) counts[e.type] = (counts[e.type] || 0) + 1;
  const parts = [typeTabs(type || "all", counts, query), searchForm(type, query)];
  if (query) {
    const found = await api("POST", userPath("/context"), {
      task: query, limit: 100, explain: true,
    });
    const scores = (found.scores || []).filter((sc) => !type || sc.type === type);
    parts.push(section("Results for \u201c" + query + "\u201d", scores.length
      ? resultsTable(scores)
      : h("p", { class: "empty" }, "Nothing matches.")));
  } else {
    const groups = type ? [type] : TYPES;
    for (const t of groups) {
      const rows = listing.entities.filter((e) => e.type === t);
      if (!rows.length && !type) continue;
      parts.push(section(TYPE_LABEL[t], rows.length
        ? entityTable(rows) : h("p", { class: "empty" }, "None yet.")));
    }
    if (!listing.entities.length) {
      parts.push(h("p", { class: "empty" }, "No entities remembered for this user yet."));
    }
  }
  page("Entities", ...parts);
}

function tableWrap(caption, head, rows) {
  return h("div", { class: "table-wrap" }, h("table", {},
    h("caption", { class: "sr-only" }, caption),
    h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows)));
}

function entityTable(entries) {
  return tableWrap("Entities", ["Name", "Type", "Importance", "Updated", "Version"],
    entries.map((e) => h("tr", {},
      h("td", {}, h("a", { href: entityHref(e.type, e.id) }, e.name)),
      h("td", {}, typeBadge(e.type)),
      h("td", { class: "num" }, fmtNum(e.importance)),
      h("td", {}, fmtDate(e.updatedAt)),
      h("td", { class: "num" }, e.version || "—"))));
}

function resultsTable(scores) {
  const top = Math.max(...scores.map((sc) => sc.score), 1e-9);
  return tableWrap("Ranked results",
    ["#", "Name", "Type", "Score", "Relevance", "Importance", "Recency", "Matched terms"],
    scores.map((sc, i) => h("tr", {},
      h("td", { class: "num" }, i + 1),
      h("td", {}, h("a", { href: entityHref(sc.type, sc.id) }, sc.name),
        sc.alwaysInjected ? h("span", { class: "badge" }, "always") : null),
      h("td", {}, typeBadge(sc.type)),
      h("td", { class: "num" },
        h("span", { class: "bar", "aria-hidden": "true" },
          h("span", { style: { width: Math.round((100 * sc.score) / top) + "%" } })),
        fmtNum(sc.score, 3)),
      h("td", { class: "num" }, fmtNum(sc.relevance, 3)),
      h("td", { class: "num" }, fmtNum(sc.importance, 3)),
      h("td", { class: "num" }, fmtNum(sc.recency, 3)),
      h("td", {}, (sc.matchedTerms || []).join(", ") || "—"))));
}
"""

APP_JS = _CORE + PAGES_JS
