-- +goose Up
-- What a token hands out lives no longer than the token: console tokens,
-- share links and public ports record the API token that made them
-- (made_by), are capped at its expiry, and are revoked with it (and with
-- any token it descends from). A console token made by a computer-only
-- token shows the screen only: no terminal, no clipboard (screen_only).
ALTER TABLE console_tokens ADD COLUMN made_by TEXT NOT NULL DEFAULT '';
ALTER TABLE console_tokens ADD COLUMN screen_only BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE share_links ADD COLUMN made_by TEXT NOT NULL DEFAULT '';
ALTER TABLE public_ports ADD COLUMN made_by TEXT NOT NULL DEFAULT '';
ALTER TABLE public_ports ADD COLUMN expires_at BIGINT;
CREATE INDEX console_tokens_made_by ON console_tokens (made_by);
CREATE INDEX share_links_made_by ON share_links (made_by);
CREATE INDEX public_ports_made_by ON public_ports (made_by);

-- Owner-wide secrets reach a desktop token's requests (and the services
-- bureau-agent runs) only on the desktops their owner allowed: a desktop
-- id, or '*' for every desktop of the owner.
CREATE TABLE secret_grants (
    owner      TEXT NOT NULL,
    name       TEXT NOT NULL,
    desktop_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (owner, name, desktop_id)
);

-- +goose Down
DROP TABLE secret_grants;
DROP INDEX public_ports_made_by;
DROP INDEX share_links_made_by;
DROP INDEX console_tokens_made_by;
ALTER TABLE public_ports DROP COLUMN expires_at;
ALTER TABLE public_ports DROP COLUMN made_by;
ALTER TABLE share_links DROP COLUMN made_by;
ALTER TABLE console_tokens DROP COLUMN screen_only;
ALTER TABLE console_tokens DROP COLUMN made_by;
