-- +goose Up
-- When the operation in flight began (Unix ms; NULL when none runs), so
-- clients can show how long it has been going.
ALTER TABLE desktops ADD COLUMN op_started_at BIGINT;

-- +goose Down
ALTER TABLE desktops DROP COLUMN op_started_at;
