import { h, say, state, statusBox } from "./dom.js";

// --- API ------------------------------------------------------------------------------------
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}
export async function api(method, path, body) {
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
export function userPath(rest) {
  return "/v1/users/" + encodeURIComponent(state.user) + (rest || "");
}
// A write refused because the entity changed since the page read it (409 version_conflict).
export function isConflict(err) {
  return err instanceof ApiError && err.code === "version_conflict";
}
export function conflictMessage(err) {
  const d = err.details || {};
  return "Not saved: " + (d.id || "this entity") + " changed since this page loaded it " +
    "(version " + d.expectedVersion + " here, " + d.currentVersion + " now). " +
    "Reload to see the newer values, then make the change again.";
}
// Says why a write failed; a conflict offers to reload the page's entity.
export function sayConflict(err, reload) {
  if (!isConflict(err)) {
    say(explain(err), "error");
    return;
  }
  say(conflictMessage(err), "error");
  const box = statusBox.querySelector(".notice");
  if (box && reload) {
    box.append(" ", h("button", { type: "button", class: "secondary small", onclick: reload },
      "Reload"));
  }
}
export function explain(err) {
  if (!(err instanceof ApiError)) return String(err);
  if (err.status === 401) return "The token was refused (401 unauthorized). Sign in again.";
  if (err.status === 403) return "This token may not access user " + state.user + " (403).";
  let text = err.message + " [" + err.code + "]";
  if (Array.isArray(err.details)) {
    text += ": " + err.details.map((d) => (d.loc || []).join(".") + " " + d.msg).join("; ");
  }
  return text;
}

