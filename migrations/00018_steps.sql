-- +goose Up
-- The step log: each computer-use action, exec and file change made in a
-- desktop, numbered per desktop. Thumbnails are files in the desktop's
-- folder; thumbs says which exist (1 before, 2 after); checkpoint names
-- the snapshot taken just before the step, when one was asked for.
CREATE TABLE steps (
    desktop_id  TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    actor       TEXT NOT NULL,
    kind        TEXT NOT NULL,
    input       TEXT NOT NULL,
    result      TEXT NOT NULL,
    status      INTEGER NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    thumbs      INTEGER NOT NULL DEFAULT 0,
    checkpoint  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (desktop_id, seq)
);

-- +goose Down
DROP TABLE steps;
