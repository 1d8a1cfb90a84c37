-- +goose Up
-- Short-lived tokens that open one desktop's console in a browser. Only the
-- SHA-256 of the secret is kept.
CREATE TABLE console_tokens (
    id            TEXT PRIMARY KEY,
    desktop_id    TEXT NOT NULL,
    owner         TEXT NOT NULL,
    hash          TEXT NOT NULL UNIQUE,
    view_only     BOOLEAN NOT NULL DEFAULT FALSE,
    created_by    TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    revoked_at    BIGINT,
    revoke_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX console_tokens_desktop ON console_tokens (desktop_id, expires_at);

-- +goose Down
DROP TABLE console_tokens;
