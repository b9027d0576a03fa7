import { api, explain, userPath } from "./api.js";
import { entityHref, h, page, say, state, typeBadge } from "./dom.js";
import { historySection } from "./entity.js";

// --- changes and forgetting -------------------------------------------------------------------
export async function changesPage(params) {
  const since = params.get("since") ||
    new Date(Date.now() - 7 * 86400000).toISOString().slice(0, 10);
  const input = h("input", {
    id: "since", type: "date", name: "since", value: since, required: true,
  });
  const form = h("form", {
    class: "row search",
    onsubmit: (event) => {
      event.preventDefault();
      location.hash = "#/changes?since=" + encodeURIComponent(input.value);
    },
  }, h("label", { for: "since" }, "Changed since"), input,
  h("button", { type: "submit" }, "Show changes"));
  const ms = Date.parse(since + "T00:00:00Z");
  if (Number.isNaN(ms)) {
    page("What changed", form, h("p", { class: "notice error" }, "Not a date: " + since));
    return;
  }
  const body = await api("GET", userPath("/changes?since=" + Math.max(0, ms - 1)));
  const groups = body.entities.map((g) => h("li", { class: "card change" },
    h("h2", {}, g.status === "live"
      ? h("a", { href: entityHref(g.type, g.id) }, g.name || g.id)
      : (g.name || g.id), " ", typeBadge(g.type), " ",
    h("span", { class: "badge status-" + (g.status || "live") }, g.status || "live")),
    historySection([...g.changes].reverse()).lastChild));
  page("What changed since " + since, form, groups.length
    ? h("ul", { class: "changes" }, groups)
    : h("p", { class: "empty" }, "No changes since " + since + "."));
}

export function forgetPage() {
  const input = h("input", {
    id: "confirm", autocomplete: "off", spellcheck: "false", "aria-describedby": "confirm-help",
  });
  const go = h("button", { type: "submit", class: "danger", disabled: true },
    "Forget " + state.user);
  input.addEventListener("input", () => { go.disabled = input.value !== state.user; });
  const result = h("div", { "aria-live": "polite" });
  const form = h("form", {
    class: "card narrow",
    onsubmit: async (event) => {
      event.preventDefault();
      if (input.value !== state.user) return;
      go.disabled = true;
      let keys = 0, rows = 0, done = null;
      try {
        for (let round = 0; round < 50; round++) {
          done = await api("DELETE", userPath(""));
          keys += done.kvKeysDeleted || 0;
          for (const n of Object.values(done.ledgerRowsDeleted || {})) rows += n;
          if (done.complete !== false) break;
        }
      } catch (err) {
        say(explain(err), "error");
        go.disabled = false;
        return;
      }
      say("Forgot user " + state.user + ".");
      result.replaceChildren(h("p", { class: "notice" }, "Everything of " + state.user +
        " was erased: " + keys + " KV keys and " + rows + " ledger rows."));
      input.value = "";
    },
  },
  h("p", {}, "This erases every entity, its history, metric observations and processed " +
    "sessions of ", h("strong", {}, state.user), ". It cannot be undone."),
  h("label", { for: "confirm" }, "Type the user id to confirm"), input,
  h("p", { id: "confirm-help", class: "help" }, "The button unlocks when it matches."),
  go, result);
  page("Forget user " + state.user, form);
}

