package teams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/desktop"
)

// Store keeps teams and their members (internal/store).
type Store interface {
	// CreateTeam records a team with its first member (desktop.ErrNameTaken
	// when the name is a team already).
	CreateTeam(ctx context.Context, t *Team) error
	// Team returns a team with its members (desktop.ErrNotFound).
	Team(ctx context.Context, name string) (*Team, error)
	// ListTeams lists the teams member is in ("" = all), with their members.
	ListTeams(ctx context.Context, member string) ([]*Team, error)
	PutMember(ctx context.Context, team string, m Member) error
	DeleteMember(ctx context.Context, team, member string) error
	DeleteTeam(ctx context.Context, name string) error
	// OwnerInUse reports whether name owns tokens or desktops or is a team.
	OwnerInUse(ctx context.Context, name string) (bool, error)
	// OwnerDesktops lists the ids of owner's desktops not deleted.
	OwnerDesktops(ctx context.Context, owner string) ([]string, error)
}

// Service manages teams.
type Service struct {
	store Store
	now   func() time.Time
	// mu orders membership changes, so two cannot both take away the
	// last admin.
	mu sync.Mutex
}

// New returns a team service over store.
func New(store Store) *Service { return &Service{store: store, now: time.Now} }

// Create makes a team with by as its first admin. A name that is already
// an owner (of tokens, desktops, or a team) is taken.
func (s *Service) Create(ctx context.Context, name, by string) (*Team, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	used, err := s.store.OwnerInUse(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("create team: %w", err)
	}
	if used {
		return nil, fmt.Errorf("%q is already an owner's or a team's name: %w", name, desktop.ErrNameTaken)
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	t := &Team{Name: name, CreatedAt: now, CreatedBy: by, Members: []Member{{Member: by, Role: RoleAdmin, AddedAt: now, AddedBy: by}}}
	if err := s.store.CreateTeam(ctx, t); err != nil {
		return nil, fmt.Errorf("create team %s: %w", name, err)
	}
	return t, nil
}

// List returns the teams member is in ("" = every team).
func (s *Service) List(ctx context.Context, member string) ([]*Team, error) {
	return s.store.ListTeams(ctx, member)
}

// Get returns a team with its members.
func (s *Service) Get(ctx context.Context, name string) (*Team, error) {
	return s.store.Team(ctx, name)
}

// RoleOf is member's role in team; desktop.ErrNotFound when there is no
// such team or member is not in it.
func (s *Service) RoleOf(ctx context.Context, team, member string) (Role, error) {
	t, err := s.store.Team(ctx, team)
	if err != nil {
		return "", err
	}
	r := t.RoleOf(member)
	if r == "" {
		return "", fmt.Errorf("team %s: %w", team, desktop.ErrNotFound)
	}
	return r, nil
}

// SetMember adds member to team with role, or changes their role, and
// returns the role they had ("" when new). The last admin is not lowered.
func (s *Service) SetMember(ctx context.Context, team, member string, role Role, by string) (Role, error) {
	if err := ValidateMember(member); err != nil {
		return "", err
	}
	if !role.Valid() {
		return "", &desktop.ValidationError{Field: "role", Message: `must be "admin", "member" or "viewer"`}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.store.Team(ctx, team)
	if err != nil {
		return "", err
	}
	was := t.RoleOf(member)
	if was == RoleAdmin && role != RoleAdmin && t.admins() == 1 {
		return "", &LastAdminError{Team: team, Member: member}
	}
	if was == role {
		return was, nil
	}
	m := Member{Member: member, Role: role, AddedAt: s.now().UTC().Truncate(time.Millisecond), AddedBy: by}
	if err := s.store.PutMember(ctx, team, m); err != nil {
		return "", fmt.Errorf("team %s: set member %s: %w", team, member, err)
	}
	return was, nil
}

// RemoveMember takes member out of team and returns the role they had.
func (s *Service) RemoveMember(ctx context.Context, team, member string) (Role, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.store.Team(ctx, team)
	if err != nil {
		return "", err
	}
	was := t.RoleOf(member)
	if was == "" {
		return "", fmt.Errorf("member %s of team %s: %w", member, team, desktop.ErrNotFound)
	}
	if was == RoleAdmin && t.admins() == 1 {
		return "", &LastAdminError{Team: team, Member: member}
	}
	if err := s.store.DeleteMember(ctx, team, member); err != nil {
		return "", fmt.Errorf("team %s: remove member %s: %w", team, member, err)
	}
	return was, nil
}

// Delete deletes a team that owns no desktops (a BusyError naming them).
func (s *Service) Delete(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.store.Team(ctx, name); err != nil {
		return err
	}
	ids, err := s.store.OwnerDesktops(ctx, name)
	if err != nil {
		return fmt.Errorf("delete team %s: %w", name, err)
	}
	if len(ids) > 0 {
		return &BusyError{Team: name, Desktops: ids}
	}
	if err := s.store.DeleteTeam(ctx, name); err != nil && !errors.Is(err, desktop.ErrNotFound) {
		return fmt.Errorf("delete team %s: %w", name, err)
	}
	return nil
}
