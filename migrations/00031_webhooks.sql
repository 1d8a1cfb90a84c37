-- +goose Up
-- Webhook endpoints (internal/webhooks): where to POST which events, for
-- whom. events is a JSON list of patterns; the secrets are sealed with
-- bureau's secrets key (base64 of nonce and ciphertext), the previous one
-- kept until previous_secret_until after a rotation.
CREATE TABLE webhooks (
    id                     TEXT PRIMARY KEY,
    owner                  TEXT NOT NULL,
    url                    TEXT NOT NULL,
    description            TEXT NOT NULL DEFAULT '',
    events                 TEXT NOT NULL,
    all_owners             BOOLEAN NOT NULL DEFAULT FALSE,
    enabled                BOOLEAN NOT NULL DEFAULT TRUE,
    created_at             BIGINT NOT NULL,
    created_by             TEXT NOT NULL DEFAULT '',
    disabled_at            BIGINT,
    disabled_reason        TEXT NOT NULL DEFAULT '',
    failing_since          BIGINT,
    failures               INTEGER NOT NULL DEFAULT 0,
    secret_sealed          TEXT NOT NULL,
    previous_secret_sealed TEXT NOT NULL DEFAULT '',
    secret_rotated_at      BIGINT,
    previous_secret_until  BIGINT
);
CREATE INDEX webhooks_owner ON webhooks (owner);

-- Each message to an endpoint and its attempts. A pending delivery is due
-- at next_at (a sender claims it by moving next_at past its attempt);
-- delivered and failed ones have none.
CREATE TABLE webhook_deliveries (
    id            TEXT PRIMARY KEY,
    webhook_id    TEXT NOT NULL,
    message_id    TEXT NOT NULL,
    event_type    TEXT NOT NULL,
    status        TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    response_code INTEGER NOT NULL DEFAULT 0,
    latency_ms    BIGINT NOT NULL DEFAULT 0,
    last_error    TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    next_at       BIGINT,
    delivered_at  BIGINT,
    redelivery_of TEXT NOT NULL DEFAULT '',
    payload       TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);

-- +goose Down
DROP INDEX webhook_deliveries_webhook;
DROP INDEX webhook_deliveries_due;
DROP TABLE webhook_deliveries;
DROP INDEX webhooks_owner;
DROP TABLE webhooks;
