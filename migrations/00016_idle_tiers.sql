-- +goose Up
-- Idle tiers before hibernation (idle_timeout_s): after nap_after_s quiet
-- seconds a desktop is paused with its RAM resident, after sleep_after_s
-- its memory is pushed out to the host's compressed swap. 0 = skip the
-- tier; desktops made before tiers existed skip both.
ALTER TABLE desktops ADD COLUMN nap_after_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE desktops ADD COLUMN sleep_after_s INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE desktops DROP COLUMN sleep_after_s;
ALTER TABLE desktops DROP COLUMN nap_after_s;
