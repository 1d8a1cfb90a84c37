-- +goose Up
-- The libvirt hosts desktops run on: the local one first, more on
-- PostgreSQL. State and facts are what the last check saw.
CREATE TABLE hosts (
    name            TEXT PRIMARY KEY,
    uri             TEXT NOT NULL UNIQUE,
    labels          TEXT NOT NULL DEFAULT '{}',
    state           TEXT NOT NULL DEFAULT 'connecting',
    hostname        TEXT NOT NULL DEFAULT '',
    libvirt_version TEXT NOT NULL DEFAULT '',
    accelerator     TEXT NOT NULL DEFAULT '',
    cpus            INTEGER NOT NULL DEFAULT 0,
    memory_mib      BIGINT NOT NULL DEFAULT 0,
    free_memory_mib BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    last_seen_at    BIGINT,
    created_at      BIGINT NOT NULL
);

-- +goose Down
DROP TABLE hosts;
