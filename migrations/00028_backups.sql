-- +goose Up
-- Backup targets: where desktops' backups go (an S3-compatible bucket or a
-- directory). The S3 secret key is kept encrypted with the secrets key
-- (secret_sealed); the rest of the location is plain JSON (location).
CREATE TABLE backup_targets (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL,
    location      TEXT NOT NULL,
    secret_sealed TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    created_by    TEXT NOT NULL DEFAULT ''
);

-- Backups of desktops' data disks. A row outlives its desktop (restoring
-- a deleted desktop is what backups are for); owner is kept for that.
-- Only a complete backup has a manifest in its target; mark is the
-- internal snapshot in the data disk the backup read, which the next
-- backup of the desktop compares with.
CREATE TABLE backups (
    id           TEXT PRIMARY KEY,
    desktop_id   TEXT NOT NULL,
    desktop_name TEXT NOT NULL,
    owner        TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    state        TEXT NOT NULL,
    kind         TEXT NOT NULL,
    why_full     TEXT NOT NULL DEFAULT '',
    consistency  TEXT NOT NULL DEFAULT '',
    parent       TEXT NOT NULL DEFAULT '',
    mark         TEXT NOT NULL DEFAULT '',
    disk_bytes   BIGINT NOT NULL DEFAULT 0,
    image        TEXT NOT NULL DEFAULT '',
    vcpus        INTEGER NOT NULL DEFAULT 0,
    memory_mib   INTEGER NOT NULL DEFAULT 0,
    bytes_read   BIGINT NOT NULL DEFAULT 0,
    read_total   BIGINT NOT NULL DEFAULT 0,
    chunks       INTEGER NOT NULL DEFAULT 0,
    chunks_new   INTEGER NOT NULL DEFAULT 0,
    bytes_new    BIGINT NOT NULL DEFAULT 0,
    started_at   BIGINT NOT NULL,
    finished_at  BIGINT,
    error        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX backups_desktop ON backups (desktop_id, started_at);
CREATE INDEX backups_owner ON backups (owner, started_at);
CREATE INDEX backups_target ON backups (target_id);

-- +goose Down
DROP INDEX backups_target;
DROP INDEX backups_owner;
DROP INDEX backups_desktop;
DROP TABLE backups;
DROP TABLE backup_targets;
