-- Per-user API tokens: stored hashed, scoped to one user id, revocable by an admin.
CREATE TABLE IF NOT EXISTS api_tokens (
  token_id   TEXT    PRIMARY KEY,
  token_hash TEXT    NOT NULL UNIQUE,  -- sha256 of the whole token; the token itself is never stored
  user_id    TEXT    NOT NULL,
  label      TEXT,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);
CREATE INDEX IF NOT EXISTS api_tokens_by_user ON api_tokens (user_id);
