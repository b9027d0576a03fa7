import { ApiError, explain } from "./js/api.js";
import { changesPage, forgetPage } from "./js/changes.js";
import { main, say, sayPending, state } from "./js/dom.js";
import { entitiesPage, signInPage } from "./js/entities.js";
import { entityPage } from "./js/entity.js";
import { renderNav, signOut } from "./js/nav.js";

// --- router -----------------------------------------------------------------------------------
async function route() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query || "");
  const parts = (path || "/").split("/").filter(Boolean).map(decodeURIComponent);
  renderNav();
  if (!state.user || parts[0] === "signin") {
    signInPage();
    document.body.dataset.route = location.hash;
    return;
  }
  main.setAttribute("aria-busy", "true");
  try {
    if (parts[0] === "entity" && parts.length === 3) await entityPage(parts[1], parts[2]);
    else if (parts[0] === "changes") await changesPage(params);
    else if (parts[0] === "forget") forgetPage();
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
