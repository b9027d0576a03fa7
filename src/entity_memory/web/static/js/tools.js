import { api, explain, userPath } from "./api.js";
import { fmtDate, h, page, say, sayNext, section, state, tableWrap } from "./dom.js";

// --- the context block preview, the export download, the admin's users ----------------------
export function contextPage(params) {
  const task = params.get("task") || "";
  const input = h("textarea", { id: "task", name: "task", rows: 2, required: true });
  input.value = task;
  const out = h("div", { "aria-live": "polite" });
  async function show(text) {
    let body;
    try { body = await api("POST", userPath("/context"), { task: text }); } catch (err) {
      say(explain(err), "error");
      return;
    }
    out.replaceChildren(section("Context block",
      h("p", { class: "help" }, body.entities.length + " entities, " +
        (body.ranking && body.ranking.semantic ? "semantic and lexical" : "ranked") +
        ": what an agent starting this task would be given."),
      h("pre", { class: "context-block" }, body.context)));
  }
  const form = h("form", {
    class: "card", onsubmit: async (event) => {
      event.preventDefault();
      await show(input.value.trim());
    },
  }, h("label", { for: "task" }, "Task of the new session"), input,
  h("button", { type: "submit" }, "Preview"));
  page("Context preview", form, out);
  input.focus();
  return task ? show(task) : null;
}

export async function exportPage() {
  const button = h("button", { type: "button", id: "export", onclick: download }, "Download JSON");
  const note = h("p", { class: "help", "aria-live": "polite" });
  async function download() {
    let body;
    try { body = await api("GET", userPath("/export")); } catch (err) {
      say(explain(err), "error");
      return;
    }
    const blob = new Blob([JSON.stringify(body, null, 2)], { type: "application/json" });
    const url = URL.createObjectURL(blob);
    const name = "entity-memory-" + state.user + ".json";
    const link = h("a", { href: url, download: name });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    note.replaceChildren("Saved " + name + ": " + body.entities.length + " entities, " +
      body.history.length + " versions.");
  }
  page("Export", h("div", { class: "card narrow" },
    h("p", {}, "Every live entity of ", h("strong", {}, state.user),
      ", its full history and metric observations, as one JSON document."), button, note));
}

export async function usersPage() {
  let body;
  try { body = await api("GET", "/v1/admin/users?limit=200"); } catch (err) {
    page("Users", h("p", { class: "notice error" }, err.status === 403
      ? "Only the admin token may list users (403)." : explain(err)));
    return;
  }
  const open = (id) => () => {
    state.user = id;
    sessionStorage.setItem("em.user", id);
    sayNext("Now inspecting " + id + ".");
    location.hash = "#/entities";
  };
  const rows = body.users.map((u) => h("tr", {},
    h("td", {}, h("button", { type: "button", class: "link", onclick: open(u.userId) },
      u.userId)),
    h("td", {}, fmtDate(u.lastWriteAt))));
  page("Users", body.users.length
    ? section("Users with memory", tableWrap("Users", ["User", "Last write"], rows),
      body.nextBefore ? h("p", { class: "help" }, "The 200 most recent are shown.") : null)
    : h("p", { class: "empty" }, "No user has written anything yet."));
}
