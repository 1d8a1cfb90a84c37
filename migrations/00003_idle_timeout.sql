-- +goose Up
-- Seconds without viewers, API actions or guest CPU use after which a running
-- desktop is hibernated; 0 = never.
ALTER TABLE desktops ADD COLUMN idle_timeout_s INTEGER NOT NULL DEFAULT 1800;

-- +goose Down
ALTER TABLE desktops DROP COLUMN idle_timeout_s;
