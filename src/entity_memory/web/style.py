"""The inspector's stylesheet: system fonts, one column on phones, light and dark."""

APP_CSS = """
:root {
  --bg: #f6f7f9; --fg: #1d2330; --muted: #5b6475; --card: #fff; --line: #dde1e8;
  --accent: #2456c9; --accent-fg: #fff; --danger: #b3261e; --ok: #1b7a3d; --warn: #9a5b00;
  --del: #fde8e7; --ins: #e3f5e9; color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #14171d; --fg: #e6e9ef; --muted: #a2aaba; --card: #1d212a; --line: #323846;
    --accent: #7aa2ff; --accent-fg: #0d1020; --danger: #ff8a80; --ok: #6fd38f; --warn: #f0b35a;
    --del: #4a2523; --ins: #1f3d2a;
  }
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body {
  margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
}
a { color: var(--accent); }
code { font: 0.9em ui-monospace, SFMono-Regular, Menlo, monospace; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 8px; top: 8px; background: var(--card); padding: 4px 8px; z-index: 2; }
.sr-only {
  position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  white-space: nowrap;
}
.top {
  display: flex; flex-wrap: wrap; align-items: center; gap: 8px 24px; padding: 10px 20px;
  background: var(--card); border-bottom: 1px solid var(--line);
}
.brand { font-weight: 700; text-decoration: none; color: var(--fg); }
.brand span { color: var(--muted); font-weight: 400; }
#nav { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 16px; flex: 1; }
#nav a { text-decoration: none; padding: 2px 0; border-bottom: 2px solid transparent; }
#nav a[aria-current="page"] { border-bottom-color: var(--accent); font-weight: 600; }
#nav .who { margin-left: auto; color: var(--muted); }
main, .status { max-width: 1100px; margin: 0 auto; padding: 0 20px; }
main { padding-bottom: 48px; }
main:focus { outline: none; }
h1 { font-size: 1.6rem; margin: 20px 0 8px; overflow-wrap: anywhere; }
h1:focus { outline: none; }
h2 { font-size: 1.1rem; margin: 0 0 10px; overflow-wrap: anywhere; }
.lead, .subtitle { color: var(--muted); margin-top: 0; }
.card {
  background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 16px 18px; margin: 16px 0;
}
.narrow { max-width: 480px; }
.card > :first-child { margin-top: 0; }
label { display: block; font-weight: 600; margin: 10px 0 4px; }
input, textarea, select {
  font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line);
  border-radius: 6px; padding: 7px 9px; width: 100%; max-width: 100%;
}
button, .button {
  font: inherit; cursor: pointer; border: 1px solid var(--accent); border-radius: 6px;
  background: var(--accent); color: var(--accent-fg); padding: 7px 14px; text-decoration: none;
  display: inline-block; white-space: nowrap;
}
button:disabled { opacity: 0.45; cursor: not-allowed; }
button.secondary, .button.secondary { background: transparent; color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); color: #fff; }
button.link {
  background: none; border: none; color: var(--accent); padding: 0; text-decoration: underline;
}
button.small { padding: 3px 10px; font-size: 0.9em; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
form > button[type="submit"] { margin-top: 12px; }
.row { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
.row input { flex: 1 1 240px; width: auto; }
.row > button { margin-top: 0; }
.search label { margin-top: 0; }
.help { color: var(--muted); font-size: 0.9em; margin: 6px 0 0; }
.empty { color: var(--muted); }
.status .notice { margin: 12px 0 0; }
.notice {
  border-left: 4px solid var(--accent); background: var(--card); padding: 8px 12px;
  border-radius: 4px;
}
.notice.error { border-left-color: var(--danger); }
.tabs { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0 14px; }
.tab {
  padding: 4px 12px; border: 1px solid var(--line); border-radius: 999px;
  text-decoration: none; background: var(--card);
}
.tab[aria-current="page"] { background: var(--accent); color: var(--accent-fg); }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td {
  text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line);
  vertical-align: top; overflow-wrap: break-word;
}
thead th { font-size: 0.85em; color: var(--muted); font-weight: 600; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
table.facts th { width: 22%; font-weight: 600; }
table.facts td.actions { width: 1%; white-space: nowrap; text-align: right; }
.inline-edit { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.inline-edit > button[type="submit"] { margin-top: 0; }
.inline-edit input, .inline-edit textarea, .inline-edit select { flex: 1 1 200px; width: auto; }
.bar {
  display: inline-block; width: 60px; height: 8px; background: var(--line); border-radius: 4px;
  margin-right: 8px; vertical-align: middle; overflow: hidden;
}
.bar span { display: block; height: 100%; background: var(--accent); }
.badge {
  display: inline-block; font-size: 0.78em; padding: 1px 8px; border-radius: 999px;
  border: 1px solid var(--line); color: var(--muted); margin-left: 4px; white-space: nowrap;
  font-weight: 500; vertical-align: middle;
}
.status-deleted, .status-expired, .kind-deleted .kind, .kind-expired .kind {
  color: var(--danger); border-color: var(--danger);
}
.kind-contradicted .kind { color: var(--warn); border-color: var(--warn); }
.kind-created .kind, .status-live { color: var(--ok); border-color: var(--ok); }
dl.meta {
  display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 14px 0 0;
  color: var(--muted); font-size: 0.9em;
}
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
ol.history, ol.provenance, ul.changes { padding-left: 0; list-style: none; margin: 0; }
ol.history > li { border-left: 3px solid var(--line); padding: 2px 0 8px 12px; margin: 0 0 8px; }
ol.history > li p { margin: 0; }
ul.diff { margin: 4px 0 0; padding-left: 18px; }
del, ins { padding: 0 3px; overflow-wrap: anywhere; }
del { background: var(--del); text-decoration: line-through; }
ins { background: var(--ins); text-decoration: none; }
blockquote {
  margin: 0; padding: 6px 12px; border-left: 3px solid var(--accent); background: var(--bg);
  white-space: pre-wrap; overflow-wrap: anywhere;
}
ol.provenance li { margin-bottom: 12px; }
figure { margin: 0; }
svg.chart { width: 100%; height: auto; }
svg.chart .point-label { fill: var(--fg); font-size: 12px; }
svg.chart .axis { stroke: var(--line); stroke-width: 1.5; }
svg.chart .line { fill: none; stroke: var(--accent); stroke-width: 2.5; }
svg.chart .dot { fill: var(--accent); }
svg.chart .tick { fill: var(--muted); font-size: 12px; }
.trend.improving { color: var(--ok); }
.trend.worsening { color: var(--danger); }
details summary { cursor: pointer; margin-top: 8px; color: var(--accent); }
.danger-zone p { margin-top: 0; }
@media (max-width: 640px) {
  .top { padding: 10px 12px; flex-direction: column; align-items: flex-start; }
  #nav { width: 100%; }
  #nav .who { margin-left: auto; }
  main, .status { padding: 0 12px; }
  th, td { padding: 6px; }
  table.facts tr {
    display: grid; grid-template-columns: 1fr auto; border-bottom: 1px solid var(--line);
  }
  table.facts th { width: auto; grid-column: 1 / -1; border: none; padding-bottom: 0; }
  table.facts td { border: none; }
}
"""
