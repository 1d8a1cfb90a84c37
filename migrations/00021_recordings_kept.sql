-- +goose Up
-- Recordings a desktop's owner keeps: they outlive the desktop (its row,
-- soft-deleted, may not be there forever), so each recording carries its
-- owner and its desktop's name.
ALTER TABLE recordings ADD COLUMN kept BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE recordings ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE recordings ADD COLUMN desktop_name TEXT NOT NULL DEFAULT '';
UPDATE recordings SET
    owner = COALESCE((SELECT d.owner FROM desktops d WHERE d.id = recordings.desktop_id), ''),
    desktop_name = COALESCE((SELECT d.name FROM desktops d WHERE d.id = recordings.desktop_id), '');
CREATE INDEX recordings_owner ON recordings (owner, started_at);

-- +goose Down
DROP INDEX recordings_owner;
ALTER TABLE recordings DROP COLUMN desktop_name;
ALTER TABLE recordings DROP COLUMN owner;
ALTER TABLE recordings DROP COLUMN kept;
