-- Registry schema v1 (both dialects: {{blob}} is BLOB on SQLite, BYTEA on PostgreSQL).
-- Times are ISO 8601 UTC text with milliseconds, so they sort and compare as text.
CREATE TABLE registry_tokens (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('minted', 'bound', 'revoked')),
  label TEXT NOT NULL DEFAULT '',
  handle TEXT,
  minted_at TEXT NOT NULL,
  claimed_at TEXT,
  revoked_at TEXT
);

CREATE TABLE registry_builders (
  handle TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  token_id TEXT NOT NULL UNIQUE REFERENCES registry_tokens (id),
  rom_count INTEGER NOT NULL DEFAULT 0,
  avatar_w INTEGER,
  avatar_h INTEGER,
  avatar_chr TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX registry_builders_created ON registry_builders (created_at, handle);

CREATE TABLE registry_roms (
  handle TEXT NOT NULL REFERENCES registry_builders (handle),
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  cartridge {{blob}} NOT NULL,
  size INTEGER NOT NULL,
  digest TEXT NOT NULL,
  cover_w INTEGER,
  cover_h INTEGER,
  cover_chr TEXT,
  published_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (handle, slug)
);
CREATE INDEX registry_roms_published ON registry_roms (published_at, handle, slug);
CREATE INDEX registry_roms_updated ON registry_roms (updated_at);

-- Writes per token per minute (fixed windows), shared by every instance on the database.
CREATE TABLE registry_rate (
  token_id TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (token_id, window_start)
);

-- One row: bumped by every catalogue write, so readers know when a cached body is stale.
CREATE TABLE registry_state (
  id INTEGER PRIMARY KEY,
  version INTEGER NOT NULL
);
INSERT INTO registry_state (id, version) VALUES (1, 0);
