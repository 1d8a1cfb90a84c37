-- +goose Up
-- The host a running desktop is moving to: from the reservation taken as
-- the move begins (its host's row locked, as for a create) until it is
-- recorded there or the move ends, the desktop's memory counts on both
-- hosts, so creates and other moves cannot overfill its destination.
ALTER TABLE desktops ADD COLUMN moving_to TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE desktops DROP COLUMN moving_to;
