-- +goose Up
-- The filesystem holding bureau's data directory on each host (its images
-- folder), as the last check measured it; 0 until measured.
ALTER TABLE hosts ADD COLUMN disk_mib BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN free_disk_mib BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE hosts DROP COLUMN free_disk_mib;
ALTER TABLE hosts DROP COLUMN disk_mib;
