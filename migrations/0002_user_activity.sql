-- Users with recent writes, so the scheduled reindex visits only those (not every user).
CREATE TABLE IF NOT EXISTS user_activity (
  user_id       TEXT    PRIMARY KEY,
  last_write_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS user_activity_by_time ON user_activity (last_write_at);
