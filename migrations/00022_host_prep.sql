-- +goose Up
-- What bureau needs of a remote host beside its libvirt URI: an SSH
-- address and the host key pinned for it (bureau's firewall and consoles
-- go through SSH), the bridge and subnet of bureau's desktop network
-- there, and whether bureau has made the host ready for desktops.
ALTER TABLE hosts ADD COLUMN ssh_address TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN ssh_host_key TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN bridge TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN subnet TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN ready BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE hosts ADD COLUMN ready_error TEXT NOT NULL DEFAULT '';

-- Base images copied to hosts: one row per host and image, with the copy's
-- progress while it runs.
CREATE TABLE host_images (
    host        TEXT NOT NULL REFERENCES hosts (name) ON DELETE CASCADE,
    image       TEXT NOT NULL,
    state       TEXT NOT NULL,
    bytes_done  BIGINT NOT NULL DEFAULT 0,
    bytes_total BIGINT NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (host, image)
);

-- +goose Down
DROP TABLE host_images;
ALTER TABLE hosts DROP COLUMN ready_error;
ALTER TABLE hosts DROP COLUMN ready;
ALTER TABLE hosts DROP COLUMN subnet;
ALTER TABLE hosts DROP COLUMN bridge;
ALTER TABLE hosts DROP COLUMN ssh_host_key;
ALTER TABLE hosts DROP COLUMN ssh_address;
