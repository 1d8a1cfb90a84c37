-- +goose Up
-- Tokens scoped to one desktop (for the agent driving it), optionally only
-- for its screen, mouse and keyboard.
ALTER TABLE api_tokens ADD COLUMN desktop_id TEXT NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN computer_only BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN computer_only;
ALTER TABLE api_tokens DROP COLUMN desktop_id;
