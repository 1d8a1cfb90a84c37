-- +goose Up
-- An owner's limits; owners without a row get the server's default plan.
CREATE TABLE quotas (
    owner          TEXT PRIMARY KEY,
    plan           TEXT NOT NULL,
    max_desktops   INTEGER NOT NULL,
    max_vcpus      INTEGER NOT NULL,
    max_memory_mib INTEGER NOT NULL,
    max_disk_gib   INTEGER NOT NULL,
    updated_at     BIGINT NOT NULL
);

-- +goose Down
DROP TABLE quotas;
