-- +goose Up
-- The desktop's keyboard layout (an XKB layout name): bureau sets it in the
-- guest and maps typed characters to keys for it.
ALTER TABLE desktops ADD COLUMN keyboard_layout TEXT NOT NULL DEFAULT 'us';

-- +goose Down
ALTER TABLE desktops DROP COLUMN keyboard_layout;
