-- +goose Up
-- Timestamps are Unix milliseconds (BIGINT) so SQLite and PostgreSQL agree.
CREATE TABLE desktops (
    id             TEXT PRIMARY KEY,
    owner          TEXT NOT NULL,
    name           TEXT NOT NULL,
    image          TEXT NOT NULL,
    vcpus          INTEGER NOT NULL,
    memory_mib     INTEGER NOT NULL,
    data_disk_gib  INTEGER NOT NULL,
    state          TEXT NOT NULL,
    desired_state  TEXT NOT NULL,
    operation      TEXT NOT NULL DEFAULT '',
    last_error     TEXT NOT NULL DEFAULT '',
    accelerator    TEXT NOT NULL,
    dir            TEXT NOT NULL,
    data_disk_path TEXT NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    deleted_at     BIGINT
);
-- Names are unique per owner among desktops that still exist.
CREATE UNIQUE INDEX desktops_owner_name ON desktops (owner, name) WHERE deleted_at IS NULL;

CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    desktop_id TEXT NOT NULL,
    type       TEXT NOT NULL,
    message    TEXT NOT NULL,
    actor      TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX events_desktop ON events (desktop_id, created_at);

CREATE TABLE images (
    name        TEXT PRIMARY KEY,
    os          TEXT NOT NULL,
    version     TEXT NOT NULL,
    path        TEXT NOT NULL,
    size_bytes  BIGINT NOT NULL,
    sha256      TEXT NOT NULL,
    recipe_hash TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    owner        TEXT NOT NULL,
    name         TEXT NOT NULL,
    hash         TEXT NOT NULL UNIQUE,
    scope        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    expires_at   BIGINT,
    revoked_at   BIGINT
);

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE images;
DROP TABLE events;
DROP TABLE desktops;
