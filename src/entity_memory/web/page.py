"""The inspector's one HTML page: a shell the script fills in; nothing stored is in it."""

INDEX_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>entity-memory</title>
<link rel="stylesheet" href="/inspector.css">
<script type="module" src="/inspector.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="#/entities">entity-memory <span>inspector</span></a>
  <nav id="nav" aria-label="Main"></nav>
</header>
<div id="status" class="status" aria-live="polite"></div>
<main id="main" tabindex="-1"><p>Loading…</p></main>
<noscript><p>The inspector needs JavaScript.</p></noscript>
</body>
</html>
"""
