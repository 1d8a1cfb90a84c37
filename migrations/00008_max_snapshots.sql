-- +goose Up
-- Most snapshots an owner's desktops may hold together; 0 = no limit. Rows
-- set from a plan get that plan's limit, custom ones none, as before.
ALTER TABLE quotas ADD COLUMN max_snapshots INTEGER NOT NULL DEFAULT 0;
UPDATE quotas SET max_snapshots = 10 WHERE plan = 'free';
UPDATE quotas SET max_snapshots = 100 WHERE plan = 'team';

-- +goose Down
ALTER TABLE quotas DROP COLUMN max_snapshots;
