import { ApiError, api, explain, sayConflict, userPath } from "./api.js";
import { mergeSection, mergedFrom } from "./manage.js";
import {
  EDIT_SESSION, HIDDEN_META, MAPPING_META, SERIES_TYPES, TYPE_LABEL, fmtDate, fmtNum, fmtValue, h, humanize, main, page, s, say, sayNext, section, tableWrap, typeBadge,
} from "./dom.js";

// --- entity page -----------------------------------------------------------
export function editableFacts(entity) {
  const facts = [
    { path: ["content"], label: "Content", value: entity.content },
    { path: ["importance"], label: "Importance", value: entity.importance },
  ];
  for (const [key, value] of Object.entries(entity.metadata || {})) {
    if (HIDDEN_META.has(key)) continue;
    const scalar = value === null || ["string", "number", "boolean"].includes(typeof value);
    const editable = scalar && !MAPPING_META.has(key);
    facts.push({ path: ["metadata", key], label: humanize(key), value, editable });
  }
  return facts;
}

export function inputFor(entity) {
  const meta = {};
  for (const [key, value] of Object.entries(entity.metadata || {})) {
    if (!HIDDEN_META.has(key)) meta[key] = value;
  }
  return {
    type: entity.type, id: entity.id, name: entity.name, content: entity.content,
    importance: entity.importance, aliases: entity.aliases || [], metadata: meta,
  };
}

export function coerce(raw, original) {
  const text = raw.trim();
  if (typeof original === "number" || (original === null && /^-?\d+(\.\d+)?$/.test(text))) {
    const n = Number(text);
    if (text === "" || !Number.isFinite(n)) throw new Error("Enter a number.");
    return n;
  }
  if (typeof original === "boolean") return text === "true";
  return raw;
}

export function factRow(entity, fact, reload) {
  const valueCell = h("td", { class: "value" }, fmtValue(fact.value));
  const row = h("tr", {}, h("th", { scope: "row" }, fact.label), valueCell);
  if (fact.editable === false) {
    row.append(h("td", {}));
    return row;
  }
  const fieldId = "edit-" + fact.path.join("-");
  const edit = h("button", {
    type: "button", class: "secondary small", "aria-label": "Edit " + fact.label,
    onclick: startEdit,
  }, "Edit");
  row.append(h("td", { class: "actions" }, edit));
  function cancel() {
    valueCell.replaceChildren(fmtValue(fact.value));
    edit.hidden = false;
    edit.focus();
  }
  function startEdit() {
    let control;
    if (typeof fact.value === "boolean") {
      control = h("select", { id: fieldId },
        h("option", { value: "true", selected: fact.value }, "true"),
        h("option", { value: "false", selected: !fact.value }, "false"));
    } else if (fact.path[0] === "content") {
      control = h("textarea", { id: fieldId, rows: 3 });
      control.value = fact.value || "";
    } else {
      control = h("input", { id: fieldId, value: fact.value === null ? "" : String(fact.value) });
    }
    const form = h("form", {
      class: "inline-edit",
      onsubmit: async (event) => {
        event.preventDefault();
        let value;
        try { value = coerce(control.value, fact.value); } catch (err) {
          say(err.message, "error");
          control.focus();
          return;
        }
        const body = inputFor(entity);
        if (fact.path.length === 1) body[fact.path[0]] = value;
        else {
          body.metadata[fact.path[1]] = value;
          // The sentence is not resent: the service keeps it unless it states the old value.
          delete body.content;
        }
        // The version this page shows: a write made since (an agent's) is not undone.
        const expected = [{ type: entity.type, id: entity.id, version: entity.version }];
        try {
          await api("PUT", userPath("/entities"),
            { session_id: EDIT_SESSION, entities: [body], expected_versions: expected });
        } catch (err) {
          sayConflict(err, reload);
          return;
        }
        say("Saved " + fact.label + ". The change is in the history below.");
        await reload();
      },
    },
    h("label", { for: fieldId, class: "sr-only" }, "New value of " + fact.label), control,
    h("button", { type: "submit", class: "small" }, "Save"),
    h("button", { type: "button", class: "secondary small", onclick: cancel }, "Cancel"));
    form.addEventListener("keydown", (event) => { if (event.key === "Escape") cancel(); });
    valueCell.replaceChildren(form);
    edit.hidden = true;
    control.focus();
  }
  return row;
}

export function factsSection(entity, reload) {
  const rows = editableFacts(entity).map((f) => factRow(entity, f, reload));
  return section("Current facts",
    h("div", { class: "table-wrap" }, h("table", { class: "facts" },
      h("caption", { class: "sr-only" }, "Current facts"), h("tbody", {}, rows))),
    h("dl", { class: "meta" },
      h("dt", {}, "Aliases"), h("dd", {}, fmtValue(entity.aliases)),
      h("dt", {}, "Version"), h("dd", {}, entity.version),
      h("dt", {}, "Created"), h("dd", {}, fmtDate(entity.createdAt)),
      h("dt", {}, "Updated"), h("dd", {}, fmtDate(entity.updatedAt)),
      h("dt", {}, "Last session"), h("dd", {}, entity.sessionId)));
}

export function provenanceSection(entity) {
  const items = entity.provenance || (entity.metadata && entity.metadata.provenance) || [];
  if (!items.length) {
    return section("Provenance", h("p", { class: "empty" },
      "No source excerpt recorded. Last written in session " + entity.sessionId + " on " +
      fmtDate(entity.updatedAt) + "."));
  }
  return section("Provenance", h("ol", { class: "provenance" }, items.map((p) => h("li", {},
    h("blockquote", {}, p.excerpt || "—"),
    h("p", { class: "help" }, "Session ", h("code", {}, p.sessionId || "—"), " · ",
      fmtDate(p.at), p.extractor ? " · " + p.extractor : "")))));
}

export function metricChart(entity, trend) {
  const meta = entity.metadata || {};
  const points = (meta.history || []).filter((p) => typeof p.value === "number");
  if (!points.length) return section("Trend", h("p", { class: "empty" }, "No observations yet."));
  // The drawing's width follows the column, so its 12px labels stay 12px on a phone.
  const W = Math.max(300, Math.min(720, main.clientWidth - 72)), H = 240;
  const L = 56, R = 24, T = 24, B = 40;
  const xs = points.map((p) => p.at), ys = points.map((p) => p.value);
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
  const px = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const py = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  const unit = meta.unit ? " " + meta.unit : "";
  const word = trend ? " (" + trend.trend + ")" : "";
  const label = meta.kpi + " from " + fmtNum(ys[0]) + unit + " to " + fmtNum(ys[ys.length - 1]) +
    unit + " over " + points.length + " observation" + (points.length > 1 ? "s" : "") + word;
  const svg = s("svg", {
    viewBox: "0 0 " + W + " " + H, class: "chart", role: "img", "aria-labelledby": "chart-title",
  },
  s("title", { id: "chart-title" }, label),
  s("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }),
  s("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }),
  s("text", { x: L - 6, y: py(y1) + 4, class: "tick", "text-anchor": "end" }, fmtNum(y1)),
  s("text", { x: L - 6, y: py(y0) + 4, class: "tick", "text-anchor": "end" }, fmtNum(y0)),
  s("text", { x: L, y: H - B + 18, class: "tick" }, fmtDate(xs[0]).slice(0, 10)),
  s("text", { x: W - R, y: H - B + 18, class: "tick", "text-anchor": "end" },
    fmtDate(xs[xs.length - 1]).slice(0, 10)));
  if (points.length > 1) {
    svg.append(s("polyline", {
      class: "line", points: points.map((p) => px(p.at) + "," + py(p.value)).join(" "),
    }));
  }
  for (const p of points) {
    svg.append(s("circle", { cx: px(p.at), cy: py(p.value), r: 4, class: "dot" },
      s("title", {}, fmtNum(p.value) + unit + " on " + fmtDate(p.at))));
    if (points.length <= 12) {
      svg.append(s("text", {
        x: px(p.at), y: py(p.value) - 9, class: "point-label", "text-anchor": "middle",
      }, fmtNum(p.value)));
    }
  }
  // What is good for the KPI comes from the service's vocabulary (`better`), never from the
  // way the values happened to move.
  const better = trend && trend.better
    ? " " + (trend.better === "lower" ? "Lower" : "Higher") + " is better for " + meta.kpi + "."
    : "";
  const summary = trend
    ? h("p", { class: "trend " + trend.trend }, label + "." + better)
    : h("p", { class: "help" }, label + ".");
  return section("Trend", h("figure", {}, svg, h("figcaption", {}, summary)),
    h("details", {}, h("summary", {}, "Observations"),
      tableWrap("Observations", ["When", "Value", "Session"], points.map((p) => h("tr", {},
        h("td", {}, fmtDate(p.at)), h("td", { class: "num" }, fmtNum(p.value) + unit),
        h("td", {}, p.sessionId || "—"))))));
}

// Lists of records (a metric's observations, provenance) are summarised by their length:
// the chart and the provenance section show them in full.
export function fmtChange(value) {
  if (Array.isArray(value) && value.some((v) => v !== null && typeof v === "object")) {
    return value.length + (value.length === 1 ? " entry" : " entries");
  }
  return fmtValue(value);
}

export function diffList(changes) {
  const keys = Object.keys(changes || {});
  if (!keys.length) return null;
  return h("ul", { class: "diff" }, keys.map((key) => h("li", {},
    h("code", {}, key), ": ",
    h("del", { "aria-label": "old value" }, fmtChange(changes[key].old)), " \u2192 ",
    h("ins", { "aria-label": "new value" }, fmtChange(changes[key].new)))));
}

export function historySection(versions) {
  if (!versions) return section("History", h("p", { class: "empty" }, "No ledger bound."));
  return section("History", h("ol", { class: "history", reversed: true }, versions.map((v) =>
    h("li", { class: "kind-" + v.changeKind },
      h("p", {}, h("strong", {}, "v" + v.version), " ",
        h("span", { class: "badge kind" }, v.changeKind), " ", fmtDate(v.recordedAt),
        v.sessionId ? h("span", { class: "help" }, " · session " + v.sessionId) : null),
      diffList(v.changes)))));
}

export function deleteSection(entity) {
  const box = h("div", { class: "danger-zone" });
  const ask = h("button", { type: "button", class: "danger", onclick: confirmDelete },
    "Delete this entity");
  box.append(ask);
  function confirmDelete() {
    const yes = h("button", { type: "button", class: "danger", onclick: doDelete },
      "Yes, delete " + entity.name);
    const no = h("button", {
      type: "button", class: "secondary",
      onclick: () => { box.replaceChildren(ask); ask.focus(); },
    }, "Cancel");
    box.replaceChildren(h("p", { role: "alert" }, "Delete \u201c" + entity.name +
      "\u201d? Its history stays in the ledger."), h("div", { class: "row" }, yes, no));
    yes.focus();
  }
  async function doDelete() {
    try {
      await api("DELETE", userPath("/entities/" + encodeURIComponent(entity.type) + "/" +
        encodeURIComponent(entity.id)));
    } catch (err) {
      say(explain(err), "error");
      return;
    }
    sayNext("Deleted " + entity.name + ".");
    location.hash = "#/entities";
  }
  return section("Delete", box);
}

export async function entityPage(type, id) {
  const base = "/entities/" + encodeURIComponent(type) + "/" + encodeURIComponent(id);
  const reload = () => entityPage(type, id);
  let entity = null;
  try {
    entity = await api("GET", userPath(base));
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
  }
  let versions = null;
  try {
    versions = (await api("GET", userPath(base + "/history"))).versions;
  } catch (err) {
    if (!(err instanceof ApiError && [404, 503].includes(err.status))) throw err;
    versions = err.status === 404 ? [] : null;
  }
  const back = h("p", {}, h("a", { href: "#/entities?type=" + type }, "\u2190 " +
    (TYPE_LABEL[type] || "Entities")));
  if (!entity) {
    page(id, back, h("p", { class: "notice" }, "This " + type + " is not in memory (deleted, " +
      "expired or never stored)."), historySection(versions));
    return;
  }
  const parts = [back, h("p", { class: "subtitle" }, typeBadge(type), " ", h("code", {}, id)),
    factsSection(entity, reload)];
  if (SERIES_TYPES.includes(type)) {
    let trend = null;
    try {
      trend = ((await api("GET", userPath("/trends"))).metrics || []).find((m) => m.id === id);
    } catch { trend = null; }
    parts.push(metricChart(entity, trend));
  }
  parts.push(provenanceSection(entity), historySection(versions));
  for (const otherId of mergedFrom(versions)) {
    let theirs = [];
    try {
      theirs = (await api("GET", userPath("/entities/" + encodeURIComponent(type) + "/" +
        encodeURIComponent(otherId) + "/history"))).versions;
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
    }
    const block = historySection(theirs);
    block.setAttribute("aria-label", "History of " + otherId);
    block.classList.add("merged");
    block.querySelector("h2").replaceChildren("Merged in: ",
      h("a", { href: "#/entity/" + encodeURIComponent(type) + "/" + encodeURIComponent(otherId) },
        otherId));
    parts.push(block);
  }
  parts.push(await mergeSection(entity, reload), deleteSection(entity));
  page(entity.name, ...parts);
}

