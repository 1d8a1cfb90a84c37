-- +goose Up
-- A draining host takes no new desktops (placement passes it over) while
-- bureau moves every desktop off it.
ALTER TABLE hosts ADD COLUMN draining BOOLEAN NOT NULL DEFAULT FALSE;
-- A desktop moved to another host while hibernated wakes there with the
-- address it leased on the old host in its saved RAM: its NIC is bounced
-- once after that wake so it asks the new host's DHCP.
ALTER TABLE desktops ADD COLUMN renew_address BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE desktops DROP COLUMN renew_address;
ALTER TABLE hosts DROP COLUMN draining;
