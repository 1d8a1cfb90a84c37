-- +goose Up
-- A snapshot is a named point a desktop can return to. Disk state lives in
-- the qcow2 files (internal snapshots); memory state, when taken, in the OS
-- disk through libvirt. This table is the list users see.
CREATE TABLE snapshots (
    id          TEXT PRIMARY KEY,
    desktop_id  TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    scope       TEXT NOT NULL,
    memory      BOOLEAN NOT NULL,
    parent      TEXT NOT NULL DEFAULT '',
    size_bytes  BIGINT NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL,
    reverted_at BIGINT
);
CREATE UNIQUE INDEX snapshots_desktop_name ON snapshots (desktop_id, name);

-- +goose Down
DROP TABLE snapshots;
