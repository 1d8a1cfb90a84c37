-- +goose Up
-- A desktop's egress policy (JSON: allow_out, deny_out) and the host user
-- its QEMU runs as (one per desktop; 0 until given one).
ALTER TABLE desktops ADD COLUMN network_policy TEXT NOT NULL DEFAULT '';
ALTER TABLE desktops ADD COLUMN vm_uid BIGINT NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX desktops_vm_uid ON desktops (vm_uid) WHERE vm_uid <> 0;

-- +goose Down
DROP INDEX desktops_vm_uid;
ALTER TABLE desktops DROP COLUMN vm_uid;
ALTER TABLE desktops DROP COLUMN network_policy;
