import type { Transport } from "./transport.js";

/**
 * Teams (docs/teams.md): owners with members, each an admin, member or viewer. `bureau.teams` makes and lists
 * them and manages their members. Act for a team with a team token: `tokens` create with the team as owner and a role.
 */

export type TeamRole = "admin" | "member" | "viewer";

/** A member of a team. */
export interface TeamMember {
  member: string;
  role: TeamRole;
  added_at: string;
  added_by: string;
}

/** A team with its members; `role` is the caller's. */
export interface Team {
  name: string;
  created_at: string;
  created_by: string;
  role: TeamRole | "";
  members: TeamMember[];
}

/** A team in a list: how many members, and the caller's role. */
export interface TeamSummary {
  name: string;
  created_at: string;
  created_by: string;
  role: TeamRole | "";
  members: number;
}

export class Teams {
  constructor(private readonly h: Transport) {}

  /** Makes a team; you become its first admin (409 name_taken for an owner's or a team's name). */
  create(name: string): Promise<Team> {
    return this.h.call("createTeam", { json: { name } });
  }

  /** The teams you are in, with your role (an admin's: every team). */
  async list(): Promise<TeamSummary[]> {
    return (await this.h.call<{ teams: TeamSummary[] }>("listTeams")).teams ?? [];
  }

  get(team: string): Promise<Team> {
    return this.h.call("getTeam", { params: { team } });
  }

  /** Deletes a team that owns no desktops (409 busy otherwise). */
  async delete(team: string): Promise<void> {
    await this.h.call("deleteTeam", { params: { team } });
  }

  /** Adds a member (an owner name) or changes their role (409 last_admin for lowering the last admin). */
  setMember(team: string, member: string, role: TeamRole): Promise<TeamMember> {
    return this.h.call("setTeamMember", { params: { team, member }, json: { role } });
  }

  /** Removes a member (yourself: leaving); their team tokens are revoked. */
  async removeMember(team: string, member: string): Promise<void> {
    await this.h.call("removeTeamMember", { params: { team, member } });
  }
}
