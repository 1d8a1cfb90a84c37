-- +goose Up
-- People in the loop (internal/loop): the questions an agent asks a person
-- (kind help) and the actions that wait for a person's approval (kind
-- approval). choices is a JSON list, action a JSON object ('' for help);
-- decided_by is '' when nobody decided (the request ran out of time).
CREATE TABLE loop_requests (
    id         TEXT PRIMARY KEY,
    desktop_id TEXT NOT NULL,
    owner      TEXT NOT NULL,
    kind       TEXT NOT NULL,
    status     TEXT NOT NULL,
    question   TEXT NOT NULL,
    choices    TEXT NOT NULL DEFAULT '',
    action     TEXT NOT NULL DEFAULT '',
    screenshot BOOLEAN NOT NULL DEFAULT FALSE,
    asked_by   TEXT NOT NULL DEFAULT '',
    asked_at   BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    gated      BOOLEAN NOT NULL DEFAULT FALSE,
    decided_by TEXT NOT NULL DEFAULT '',
    decided_at BIGINT,
    answer     TEXT NOT NULL DEFAULT '',
    choice     BOOLEAN NOT NULL DEFAULT FALSE,
    reason     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX loop_requests_desktop ON loop_requests (desktop_id, asked_at);
CREATE INDEX loop_requests_owner ON loop_requests (owner, status);

-- A desktop's approval policy (JSON, as internal/loop reads it).
CREATE TABLE approval_policies (
    desktop_id TEXT PRIMARY KEY,
    policy     TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Who a console link is for ("Dana"), shown to the others watching and
-- in the history.
ALTER TABLE console_tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE console_tokens DROP COLUMN name;
DROP TABLE approval_policies;
DROP INDEX loop_requests_owner;
DROP INDEX loop_requests_desktop;
DROP TABLE loop_requests;
