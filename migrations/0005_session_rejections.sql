-- What an extraction refused, per session, and why (schema, grounding, parsing): the inspector's
-- session view and MCP `remember` say it. Rows go with the user (DELETE /v1/users/{user}).
CREATE TABLE IF NOT EXISTS session_rejections (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id      TEXT    NOT NULL,
  session_id   TEXT    NOT NULL,
  extractor    TEXT    NOT NULL,
  entity_type  TEXT,                     -- the candidate's type, when it had one
  name         TEXT,                     -- the candidate's name, when it had one
  code         TEXT,                     -- a stable reason code (grounding), when there is one
  reason       TEXT    NOT NULL,
  item_json    TEXT    NOT NULL,         -- the candidate as the extractor gave it (capped)
  recorded_at  INTEGER NOT NULL          -- epoch ms
);
CREATE INDEX IF NOT EXISTS session_rejections_by_session
  ON session_rejections (user_id, session_id, seq);
