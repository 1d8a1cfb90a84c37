-- +goose Up
-- The host a desktop runs on: its VM, disks and folder are there.
ALTER TABLE desktops ADD COLUMN host TEXT NOT NULL DEFAULT 'local';

-- +goose Down
ALTER TABLE desktops DROP COLUMN host;
