-- +goose Up
-- Recordings of desktops' screens (WebM files in bureau's data directory).
CREATE TABLE recordings (
    id          TEXT PRIMARY KEY,
    desktop_id  TEXT NOT NULL,
    state       TEXT NOT NULL,
    actor       TEXT NOT NULL DEFAULT '',
    fps         INTEGER NOT NULL,
    max_seconds INTEGER NOT NULL,
    width       INTEGER NOT NULL DEFAULT 0,
    height      INTEGER NOT NULL DEFAULT 0,
    frames      BIGINT NOT NULL DEFAULT 0,
    size_bytes  BIGINT NOT NULL DEFAULT 0,
    ended_why   TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    started_at  BIGINT NOT NULL,
    ended_at    BIGINT
);
CREATE INDEX recordings_desktop ON recordings (desktop_id, started_at);

-- +goose Down
DROP TABLE recordings;
