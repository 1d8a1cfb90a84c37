-- +goose Up
-- Whether bureau starts a desktop again when its QEMU process dies.
ALTER TABLE desktops ADD COLUMN restart_on_crash BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE desktops DROP COLUMN restart_on_crash;
