-- +goose Up
-- A desktop's backup schedule: every every_minutes to target_id, then the
-- desktop's backups in that target are thinned out (keep the newest
-- keep_last, and the newest of each of the last keep_hourly hours,
-- keep_daily days and keep_weekly weeks; the newest backup always stays).
CREATE TABLE backup_schedules (
    desktop_id    TEXT PRIMARY KEY,
    target_id     TEXT NOT NULL,
    every_minutes INTEGER NOT NULL,
    keep_last     INTEGER NOT NULL,
    keep_hourly   INTEGER NOT NULL,
    keep_daily    INTEGER NOT NULL,
    keep_weekly   INTEGER NOT NULL,
    next_at       BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    updated_by    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX backup_schedules_next ON backup_schedules (next_at);

-- +goose Down
DROP INDEX backup_schedules_next;
DROP TABLE backup_schedules;
