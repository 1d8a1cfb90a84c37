-- +goose Up
-- The audit log (internal/audit): every state-changing API call and every
-- console session, who made it from where, to what, and how it ended.
-- Rows are only ever added, and deleted by retention pruning. Nothing here
-- comes from a request's body, query string or headers.
CREATE TABLE audit_log (
    id            TEXT PRIMARY KEY,
    at            BIGINT NOT NULL,
    owner         TEXT NOT NULL DEFAULT '',
    subject_owner TEXT NOT NULL DEFAULT '',
    token_id      TEXT NOT NULL DEFAULT '',
    token_name    TEXT NOT NULL DEFAULT '',
    person        TEXT NOT NULL DEFAULT '',
    client_ip     TEXT NOT NULL DEFAULT '',
    method        TEXT NOT NULL,
    route         TEXT NOT NULL,
    action        TEXT NOT NULL,
    object_type   TEXT NOT NULL DEFAULT '',
    object_id     TEXT NOT NULL DEFAULT '',
    desktop_id    TEXT NOT NULL DEFAULT '',
    status        INTEGER NOT NULL,
    error_code    TEXT NOT NULL DEFAULT '',
    duration_ms   BIGINT NOT NULL DEFAULT 0,
    detail        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log (at, id);
CREATE INDEX audit_log_owner ON audit_log (owner, at);
CREATE INDEX audit_log_subject_owner ON audit_log (subject_owner, at);
CREATE INDEX audit_log_desktop ON audit_log (desktop_id, at);
CREATE INDEX audit_log_object ON audit_log (object_id, at);

-- +goose Down
DROP TABLE audit_log;
