// The inspector's DOM helpers, constants and session state.
// Stored text is data: it reaches the page through textContent or setAttribute (h() below),
// never through innerHTML: memory is written by agents from conversations.
// The kinds (types, labels, example metadata, which keep a series) come from the server.
export { EXAMPLE_METADATA, SERIES_TYPES, TYPES, TYPE_LABEL } from "./kinds.js";
import { TYPE_LABEL } from "./kinds.js";
export const EDIT_SESSION = "inspector-edit";
export const HIDDEN_META = new Set(["history", "provenance"]);
// Metadata that is a mapping even when unset: not editable as one value.
export const MAPPING_META = new Set(["lastPerformance"]);
export const state = {
  token: sessionStorage.getItem("em.token") || "",
  user: sessionStorage.getItem("em.user") || "",
  // Signed in without a user or a token to a service without API_TOKEN: the user list is open.
  open: sessionStorage.getItem("em.open") === "1",
};
export const main = document.getElementById("main");
export const statusBox = document.getElementById("status");

// --- DOM helpers ------------------------------------------------------------------------
export function h(tag, attrs, ...children) {
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
export const SVG_NS = "http://www.w3.org/2000/svg";
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
  for (const child of children) el.append(child instanceof Node ? child : String(child));
  return el;
}
export function fmtDate(ms) {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}
export function fmtValue(value) {
  if (value === null || value === undefined || value === "") return "—";
  if (Array.isArray(value)) return value.length ? value.map(fmtValue).join(", ") : "—";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}
export function humanize(key) {
  if (key === "kpi") return "KPI";
  const words = key.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/_/g, " ").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
export function fmtNum(n, digits = 2) {
  return typeof n === "number" ? String(Number(n.toFixed(digits))) : fmtValue(n);
}
export function typeBadge(type) {
  return h("span", { class: "badge type-" + type }, (TYPE_LABEL[type] || type).replace(/s$/, ""));
}
export function say(message, kind = "info") {
  statusBox.replaceChildren();
  if (!message) return;
  statusBox.append(h("p", { class: "notice " + kind, role: kind === "error" ? "alert" : null },
    message));
}
// A message for the page a navigation is about to show (the hash change clears the old one).
let pending = { message: "", kind: "info" };
export function sayNext(message, kind = "info") {
  pending = { message, kind };
}
// Shows the message queued for this page and clears it.
export function sayPending() {
  say(pending.message, pending.kind);
  pending = { message: "", kind: "info" };
}
export function page(title, ...children) {
  document.title = title + " · entity-memory";
  main.replaceChildren(h("h1", { tabindex: "-1", id: "page-title" }, title), ...children);
  document.getElementById("page-title").focus({ preventScroll: true });
}
export function section(title, ...children) {
  return h("section", { class: "card", "aria-label": title }, h("h2", {}, title), ...children);
}
export function entityHref(type, id) {
  return "#/entity/" + encodeURIComponent(type) + "/" + encodeURIComponent(id);
}

export function tableWrap(caption, head, rows) {
  // Each cell names its column, so a phone's stylesheet can stack the rows (no sideways scroll).
  for (const row of rows) {
    [...row.children].forEach((cell, i) => { if (head[i]) cell.dataset.label = head[i]; });
  }
  return h("div", { class: "table-wrap" }, h("table", { class: "data" },
    h("caption", { class: "sr-only" }, caption),
    h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows)));
}
