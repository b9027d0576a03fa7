import { api, explain, sayConflict, userPath } from "./api.js";
import { EDIT_SESSION, EXAMPLE_METADATA, TYPES, TYPE_LABEL, entityHref, h, page, say, sayNext, section } from "./dom.js";

// --- adding and merging, through the public write path (PUT and DELETE) ----------------------
// A merge (one write of the service) records the kept entity's new version under this session
// prefix, which no other write may use, then deletes the other: the kept entity's history says
// what was merged in, and the deleted one's history stays in the ledger.
export const MERGE_SESSION = "inspector-merge.";

export function addPage(params) {
  const chosen = TYPES.includes(params.get("type")) ? params.get("type") : TYPES[0];
  const type = h("select", { id: "add-type", name: "type" },
    TYPES.map((t) => h("option", { value: t, selected: t === chosen }, TYPE_LABEL[t])));
  const name = h("input", { id: "add-name", name: "name", required: true, maxlength: 200 });
  const content = h("textarea", { id: "add-content", name: "content", rows: 3 });
  const importance = h("input", {
    id: "add-importance", name: "importance", type: "number", min: 0, max: 1, step: 0.05,
    value: 0.5,
  });
  const metadata = h("textarea", {
    id: "add-metadata", name: "metadata", rows: 3, "aria-describedby": "add-metadata-help",
  });
  metadata.value = EXAMPLE_METADATA[chosen];
  type.addEventListener("change", () => { metadata.value = EXAMPLE_METADATA[type.value]; });
  async function onSubmit(event) {
    event.preventDefault();
    let meta;
    try {
      meta = metadata.value.trim() ? JSON.parse(metadata.value) : {};
    } catch (err) {
      say("Metadata is not JSON: " + err.message, "error");
      metadata.focus();
      return;
    }
    const entity = {
      type: type.value, name: name.value.trim(), content: content.value.trim(),
      importance: Number(importance.value), metadata: meta,
    };
    let done;
    try {
      done = await api("PUT", userPath("/entities"), { session_id: EDIT_SESSION, entities: [entity] });
    } catch (err) {
      say(explain(err), "error");
      return;
    }
    const result = done.results[0];
    sayNext((result.status === "created" ? "Added " : "Updated ") + entity.name + ".");
    location.hash = entityHref(result.type, result.id);
  }
  page("Add an entity", h("form", { class: "card narrow", onsubmit: onSubmit },
    h("label", { for: "add-type" }, "Type"), type,
    h("label", { for: "add-name" }, "Name"), name,
    h("label", { for: "add-content" }, "Content"), content,
    h("label", { for: "add-importance" }, "Importance (0 to 1)"), importance,
    h("label", { for: "add-metadata" }, "Metadata (JSON)"), metadata,
    h("p", { id: "add-metadata-help", class: "help" },
      "The type's fields; an entity with the same name is updated, not duplicated."),
    h("button", { type: "submit" }, "Add")));
  name.focus();
}

// One write in the user's writer: both versions as read, checked there (409 if either changed).
export async function mergeEntities(keep, otherId) {
  const other = await api("GET", userPath("/entities/" + encodeURIComponent(keep.type) + "/" +
    encodeURIComponent(otherId)));
  const done = await api("POST", userPath("/entities/" + encodeURIComponent(keep.type) + "/" +
    encodeURIComponent(keep.id) + "/merge"),
  { other: other.id, version: keep.version, other_version: other.version });
  return { other, dropped: done.droppedAliases || [] };
}

export async function mergeSection(entity, reload) {
  const listing = await api("GET", userPath("/entities?type=" + encodeURIComponent(entity.type)));
  const others = listing.entities.filter((e) => e.id !== entity.id);
  if (!others.length) {
    return section("Merge", h("p", { class: "empty" },
      "No other " + entity.type.replace("_", " ") + " to merge into this one."));
  }
  const pick = h("select", { id: "merge-other", name: "other" },
    others.map((e) => h("option", { value: e.id }, e.name)));
  async function onSubmit(event) {
    event.preventDefault();
    let merged;
    try { merged = await mergeEntities(entity, pick.value); } catch (err) {
      sayConflict(err, reload);
      return;
    }
    const { other, dropped } = merged;
    let text = "Merged " + other.name + " into " + entity.name + ": its name is an alias " +
      "now, and both histories are kept.";
    if (dropped.length) {
      text += " An entity keeps at most 20 aliases; left out: " + dropped.join(", ") + ".";
    }
    say(text);
    await reload();
  }
  return section("Merge", h("form", { class: "row", onsubmit: onSubmit },
    h("label", { for: "merge-other" }, "The same thing as"), pick,
    h("button", { type: "submit", class: "secondary" }, "Merge into this")),
  h("p", { class: "help" }, "The other's name and aliases join this one's, its facts fill " +
    "what this one lacks, then it is deleted; its history stays in the ledger."));
}

// The entities merged into this one (sessions under MERGE_SESSION in its history).
export function mergedFrom(versions) {
  return [...new Set((versions || [])
    .map((v) => v.sessionId || "")
    .filter((sid) => sid.startsWith(MERGE_SESSION))
    .map((sid) => sid.slice(MERGE_SESSION.length)))];
}
