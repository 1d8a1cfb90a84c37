-- +goose Up
-- The token that minted this one ('' = made on the host by the CLI or at
-- bootstrap), so revoking a token can revoke everything it minted.
ALTER TABLE api_tokens ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
CREATE INDEX api_tokens_parent ON api_tokens (parent_id);

-- +goose Down
DROP INDEX api_tokens_parent;
ALTER TABLE api_tokens DROP COLUMN parent_id;
