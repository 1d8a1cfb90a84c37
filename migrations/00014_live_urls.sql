-- +goose Up
-- Live URLs: share links (only the SHA-256 of each secret is kept) and the
-- ports their owner made public.
CREATE TABLE share_links (
    id         TEXT PRIMARY KEY,
    desktop_id TEXT NOT NULL,
    owner      TEXT NOT NULL,
    port       INTEGER NOT NULL,
    hash       TEXT NOT NULL UNIQUE,
    read_only  BOOLEAN NOT NULL DEFAULT FALSE,
    created_by TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX share_links_desktop ON share_links (desktop_id);
CREATE TABLE public_ports (
    desktop_id TEXT NOT NULL,
    port       INTEGER NOT NULL,
    created_by TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    PRIMARY KEY (desktop_id, port)
);

-- +goose Down
DROP TABLE public_ports;
DROP TABLE share_links;
