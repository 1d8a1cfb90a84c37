-- +goose Up
-- Single sign-on (docs/sign-in.md): a sign-in is an API token of the kind
-- "session", minted only by the OpenID Connect callback; its secret is the
-- browser's bureau_session cookie. Tokens a session mints are not its
-- children (no parent_id): they outlive signing out.
ALTER TABLE api_tokens ADD COLUMN is_session BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN is_session;
