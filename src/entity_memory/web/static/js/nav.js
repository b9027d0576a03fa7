import { h, sayNext, state } from "./dom.js";

// --- layout -----------------------------------------------------------------------------------
export function renderNav() {
  const nav = document.getElementById("nav");
  nav.replaceChildren();
  if (!state.user) {
    if (state.token || state.open) {
      nav.append(h("a", { href: "#/users" }, "Users"),
        h("button", { type: "button", class: "link", onclick: () => signOut() }, "Sign out"));
    }
    return;
  }
  const here = location.hash.split("?")[0];
  const link = (href, label) => h("a", {
    href, "aria-current": here.startsWith(href.split("?")[0]) ? "page" : null,
  }, label);
  nav.append(
    link("#/entities", "Entities"), link("#/sessions", "Sessions"), link("#/context", "Context"),
    link("#/changes", "Changes"), link("#/export", "Export"), link("#/users", "Users"),
    link("#/forget", "Forget user"),
    h("span", { class: "who" }, "User ", h("strong", {}, state.user)),
    h("button", { type: "button", class: "link", onclick: () => signOut() }, "Sign out"),
  );
}
export function signOut(message = "Signed out.", kind = "info") {
  state.token = "";
  state.user = "";
  state.open = false;
  sessionStorage.removeItem("em.open");
  sessionStorage.removeItem("em.token");
  sessionStorage.removeItem("em.user");
  sayNext(message, kind);
  location.hash = "#/signin";
}

