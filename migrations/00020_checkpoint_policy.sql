-- +goose Up
-- Each desktop's automatic checkpoint policy (no row: off). before_kinds
-- lists step kinds, comma-separated. A step says why the automatic
-- checkpoint it was due was not taken (checkpoint_error).
CREATE TABLE checkpoint_policies (
    desktop_id   TEXT PRIMARY KEY,
    every_steps  INTEGER NOT NULL DEFAULT 0,
    before_kinds TEXT NOT NULL DEFAULT '',
    memory       BOOLEAN NOT NULL DEFAULT FALSE,
    keep         INTEGER NOT NULL DEFAULT 5,
    updated_at   BIGINT NOT NULL
);
ALTER TABLE steps ADD COLUMN checkpoint_error TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE steps DROP COLUMN checkpoint_error;
DROP TABLE checkpoint_policies;
