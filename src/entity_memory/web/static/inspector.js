import { ApiError, explain } from "./js/api.js";
import { changesPage, forgetPage } from "./js/changes.js";
import { main, say, sayPending, state } from "./js/dom.js";
import { entitiesPage, signInPage } from "./js/entities.js";
import { entityPage } from "./js/entity.js";
import { addPage } from "./js/manage.js";
import { renderNav, signOut } from "./js/nav.js";
import { sessionPage, sessionsPage } from "./js/sessions.js";
import { contextPage, exportPage, usersPage } from "./js/tools.js";

// --- router -----------------------------------------------------------------------------------
async function route() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query || "");
  const parts = (path || "/").split("/").filter(Boolean).map(decodeURIComponent);
  renderNav();
  // The admin's user list needs no user; every other page is about one.
  const adminOnly = parts[0] === "users" && (state.token || state.user || state.open);
  if ((!state.user && !adminOnly) || parts[0] === "signin") {
    signInPage();
    document.body.dataset.route = location.hash;
    return;
  }
  main.setAttribute("aria-busy", "true");
  try {
    if (parts[0] === "entity" && parts.length === 3) await entityPage(parts[1], parts[2]);
    else if (parts[0] === "changes") await changesPage(params);
    else if (parts[0] === "forget") forgetPage();
    else if (parts[0] === "add") addPage(params);
    else if (parts[0] === "sessions") await sessionsPage();
    else if (parts[0] === "session" && parts.length === 2) await sessionPage(parts[1]);
    else if (parts[0] === "context") await contextPage(params);
    else if (parts[0] === "export") await exportPage();
    else if (parts[0] === "users") await usersPage();
    else await entitiesPage(params);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) signOut(explain(err), "error");
    else say(explain(err), "error");
  } finally {
    main.removeAttribute("aria-busy");
    document.body.dataset.route = location.hash;  // rendered: what tests wait for
  }
}
window.addEventListener("hashchange", () => {
  sayPending();
  route();
});
route();
