-- +goose Up
-- A desktop's egress policy (JSON: allow_out, deny_out), the host user its
-- QEMU runs as (one per desktop; 0 until given one) and its address on the
-- desktops' network (reserved in DHCP, bound by the firewall; one per live
-- desktop).
ALTER TABLE desktops ADD COLUMN network_policy TEXT NOT NULL DEFAULT '';
ALTER TABLE desktops ADD COLUMN vm_uid BIGINT NOT NULL DEFAULT 0;
ALTER TABLE desktops ADD COLUMN net_ip TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX desktops_vm_uid ON desktops (vm_uid) WHERE vm_uid <> 0;
CREATE UNIQUE INDEX desktops_net_ip ON desktops (net_ip) WHERE net_ip <> '' AND deleted_at IS NULL;

-- +goose Down
DROP INDEX desktops_net_ip;
DROP INDEX desktops_vm_uid;
ALTER TABLE desktops DROP COLUMN net_ip;
ALTER TABLE desktops DROP COLUMN vm_uid;
ALTER TABLE desktops DROP COLUMN network_policy;
