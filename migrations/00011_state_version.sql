-- +goose Up
-- version makes every state write a compare-and-set: a writer that read an
-- older row gets an error instead of silently undoing a newer write.
ALTER TABLE desktops ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
-- step is how far the operation in flight got, so a restarted bureau
-- finishes it from there (or rolls it back) instead of guessing.
ALTER TABLE desktops ADD COLUMN op_step TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE desktops DROP COLUMN op_step;
ALTER TABLE desktops DROP COLUMN version;
