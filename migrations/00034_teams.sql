-- +goose Up
-- Teams and roles (docs/teams.md): a team is an owner with members, each
-- an admin, member or viewer of it. A member is named by their owner name.
CREATE TABLE teams (
    name       TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    created_by TEXT NOT NULL DEFAULT ''
);

CREATE TABLE team_members (
    team     TEXT NOT NULL,
    member   TEXT NOT NULL,
    role     TEXT NOT NULL,
    added_at BIGINT NOT NULL,
    added_by TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (team, member)
);
CREATE INDEX team_members_member ON team_members (member);

-- A team token (owner = the team) holds its role and the person it acts
-- for (member); a team sign-in also the scope of that person's own
-- sign-in (member_scope), to switch back to.
ALTER TABLE api_tokens ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN member TEXT NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN member_scope TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN member_scope;
ALTER TABLE api_tokens DROP COLUMN member;
ALTER TABLE api_tokens DROP COLUMN role;
DROP INDEX team_members_member;
DROP TABLE team_members;
DROP TABLE teams;
