-- Sessions whose LLM extraction failed in part or whole: the messages still owed, retried by
-- the scheduled handler (and by a re-send of the session). A row goes once they are extracted.
CREATE TABLE IF NOT EXISTS pending_sessions (
  user_id         TEXT    NOT NULL,
  session_id      TEXT    NOT NULL,
  extractor       TEXT    NOT NULL,            -- the LLM extractor that failed
  content_hash    TEXT    NOT NULL,            -- of `messages`, as in processed_sessions
  messages        TEXT,                        -- JSON [{"role", "content"}]; NULL if too large
  ranges          TEXT    NOT NULL,            -- JSON [[start, end], ...]: messages still owed
  reason          TEXT    NOT NULL,            -- the last failure
  attempts        INTEGER NOT NULL DEFAULT 1,
  next_attempt_at INTEGER NOT NULL,            -- epoch ms
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (user_id, session_id)
);
CREATE INDEX IF NOT EXISTS pending_sessions_due ON pending_sessions (next_attempt_at);
