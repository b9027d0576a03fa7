import { api, explain, userPath } from "./api.js";
import {
  TYPES, TYPE_LABEL, entityHref, fmtDate, fmtNum, h, page, say, sayNext, section, state, tableWrap, typeBadge,
} from "./dom.js";

// --- pages ------------------------------------------------------------------------------------
export function signInPage() {
  const user = h("input", {
    id: "user", name: "user", autocomplete: "username", "aria-describedby": "user-help",
    value: state.user, pattern: "[A-Za-z0-9._@+\\-]+", spellcheck: "false",
  });
  const token = h("input", {
    id: "token", name: "token", type: "password", autocomplete: "current-password",
    "aria-describedby": "token-help",
  });
  const form = h("form", { class: "card narrow", onsubmit: onSubmit },
    h("label", { for: "user" }, "User id"), user,
    h("p", { id: "user-help", class: "help" }, "Empty with the admin token: the list of users."),
    h("label", { for: "token" }, "Token"), token,
    h("p", { id: "token-help", class: "help" },
      "The admin token (API_TOKEN) or a token minted for this user. Leave empty when the " +
      "service runs without API_TOKEN. Kept in this tab's session storage only."),
    h("button", { type: "submit" }, "Sign in"));
  async function onSubmit(event) {
    event.preventDefault();
    state.user = user.value.trim();
    state.token = token.value.trim();
    state.open = false;
    try {
      await api("GET", state.user ? userPath("/entities") : "/v1/admin/users?limit=1");
    } catch (err) {
      const neither = !state.user && !state.token && err.status === 401;
      say(neither ? "Enter a user id, or the admin token to list the users." : explain(err),
        "error");
      return;
    }
    // Neither a user nor a token, and the user list answered: the service has no API_TOKEN.
    state.open = !state.user && !state.token;
    sessionStorage.setItem("em.user", state.user);
    sessionStorage.setItem("em.token", state.token);
    sessionStorage.setItem("em.open", state.open ? "1" : "");
    sayNext(state.user ? "Signed in as " + state.user + "."
      : state.open ? "This service runs without API_TOKEN: every user's memory is open. " +
        "Pick a user." : "Signed in as the admin.");
    location.hash = state.user ? "#/entities" : "#/users";
  }
  page("Sign in", h("p", { class: "lead" },
    "Inspect and steer what entity-memory remembers about one user."), form);
  user.focus();
}

export function typeTabs(active, counts, query) {
  const q = query ? "&q=" + encodeURIComponent(query) : "";
  const tab = (type, label) => h("a", {
    class: "tab", href: "#/entities?type=" + type + q,
    "aria-current": (active || "all") === type ? "page" : null,
  }, label + (counts ? " (" + (counts[type] || 0) + ")" : ""));
  return h("nav", { class: "tabs", "aria-label": "Entity types" },
    tab("all", "All"), TYPES.map((t) => tab(t, TYPE_LABEL[t])));
}

export function searchForm(type, query) {
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

export async function entitiesPage(params) {
  const type = TYPES.includes(params.get("type")) ? params.get("type") : null;
  const query = (params.get("q") || "").trim();
  const listing = await api("GET", userPath("/entities?values=true"));
  const counts = { all: listing.count };
  for (const e of listing.entities) counts[e.type] = (counts[e.type] || 0) + 1;
  const parts = [typeTabs(type || "all", counts, query), searchForm(type, query),
    h("p", {}, h("a", { class: "button secondary", href: "#/add" + (type ? "?type=" + type : "") },
      "Add an entity"))];
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

// Grouped by type already (a section per type): no Type column; the value saves a click.
export function entityTable(entries) {
  return tableWrap("Entities", ["Name", "Value", "Importance", "Updated", "Version"],
    entries.map((e) => h("tr", {},
      h("td", {}, h("a", { href: entityHref(e.type, e.id) }, e.name)),
      h("td", { class: "value" }, e.value || "—"),
      h("td", { class: "num" }, fmtNum(e.importance)),
      h("td", {}, fmtDate(e.updatedAt)),
      h("td", { class: "num" }, e.version || "—"))));
}

export function resultsTable(scores) {
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
