-- The ledger: every version of every entity, metric observations, processed sessions.
-- Append-only except for forgetting a user (DELETE /v1/users/{user}).

CREATE TABLE IF NOT EXISTS entity_versions (
  seq            INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id        TEXT    NOT NULL,
  entity_type    TEXT    NOT NULL,
  entity_id      TEXT    NOT NULL,
  version        INTEGER NOT NULL,
  change_kind    TEXT    NOT NULL
                 CHECK (change_kind IN ('created', 'updated', 'contradicted', 'deleted', 'expired')),
  entity_json    TEXT,                          -- the full entity after the change (NULL if gone)
  changed_fields TEXT    NOT NULL DEFAULT '{}', -- {"field": {"old": ..., "new": ...}}
  session_id     TEXT,
  recorded_at    INTEGER NOT NULL               -- epoch ms
);
CREATE INDEX IF NOT EXISTS entity_versions_by_entity
  ON entity_versions (user_id, entity_type, entity_id, seq);
CREATE INDEX IF NOT EXISTS entity_versions_by_time
  ON entity_versions (user_id, recorded_at);

CREATE TABLE IF NOT EXISTS metric_observations (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id     TEXT    NOT NULL,
  metric_id   TEXT    NOT NULL,
  campaign    TEXT,
  kpi         TEXT    NOT NULL,
  value       REAL    NOT NULL,
  unit        TEXT,
  observed_at INTEGER NOT NULL,
  session_id  TEXT
);
CREATE INDEX IF NOT EXISTS metric_observations_by_metric
  ON metric_observations (user_id, metric_id, observed_at);

CREATE TABLE IF NOT EXISTS processed_sessions (
  user_id      TEXT    NOT NULL,
  session_id   TEXT    NOT NULL,
  content_hash TEXT    NOT NULL,
  processed_at INTEGER NOT NULL,
  counts       TEXT    NOT NULL DEFAULT '{}',
  PRIMARY KEY (user_id, session_id)
);
