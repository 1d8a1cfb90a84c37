-- +goose Up
-- Secrets, encrypted with AES-256-GCM under a key kept outside the
-- database (secrets.key in the data directory). desktop_id '' is an owner's
-- secret for all of their desktops. nonce and ciphertext are base64.
CREATE TABLE secrets (
    owner      TEXT NOT NULL,
    desktop_id TEXT NOT NULL DEFAULT '',
    name       TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    ciphertext TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (owner, desktop_id, name)
);
CREATE INDEX secrets_desktop ON secrets (desktop_id);

-- +goose Down
DROP TABLE secrets;
