"""Teams (docs/teams.md): owners with members, each an admin, member or
viewer. ``client.teams`` makes and lists them and manages their members
(answers are the API's JSON objects, as dicts). Act for a team with a team
token: ``client.tokens``' create with the team as owner and a role."""

from __future__ import annotations

from typing import Any


class Teams:
    """Create, list, read and delete teams; add, change and remove members."""

    def __init__(self, http: Any):
        self._h = http

    def create(self, name: str) -> dict:
        """Makes a team; you become its first admin (409 name_taken for an
        owner's or a team's name)."""
        return self._h.call("createTeam", json_body={"name": name})

    def list(self) -> list[dict]:
        """The teams you are in, with your role (an admin's: every team)."""
        return self._h.call("listTeams")["teams"] or []

    def get(self, team: str) -> dict:
        """A team with its members."""
        return self._h.call("getTeam", {"team": team})

    def delete(self, team: str) -> None:
        """Deletes a team that owns no desktops (409 busy otherwise)."""
        self._h.call("deleteTeam", {"team": team})

    def set_member(self, team: str, member: str, role: str) -> dict:
        """Adds a member (an owner name) or changes their role: admin,
        member or viewer (409 last_admin for lowering the last admin)."""
        return self._h.call("setTeamMember", {"team": team, "member": member}, json_body={"role": role})

    def remove_member(self, team: str, member: str) -> None:
        """Removes a member (yourself: leaving); their team tokens are revoked."""
        self._h.call("removeTeamMember", {"team": team, "member": member})
