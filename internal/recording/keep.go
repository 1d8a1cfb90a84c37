package recording

import (
	"context"
	"fmt"
)

// SetKept marks a desktop's recording kept (it stays when the desktop is
// deleted, and the size budget never removes it) or not.
func (s *Service) SetKept(ctx context.Context, desktopID, id string, kept bool) (*Recording, error) {
	r, err := s.Get(ctx, desktopID, id)
	if err != nil {
		return nil, err
	}
	if err := s.store.SetRecordingKept(ctx, id, kept); err != nil {
		return nil, err
	}
	s.markActive(desktopID, id, kept)
	r.Kept = kept
	return r, nil
}

// KeepAll marks every recording of a desktop kept (its deletion is to
// leave them) and returns the ids it changed, for Unkeep should the
// deletion not happen.
func (s *Service) KeepAll(ctx context.Context, desktopID string) ([]string, error) {
	list, err := s.store.ListRecordings(ctx, desktopID)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, r := range list {
		if r.Kept {
			continue
		}
		if err := s.store.SetRecordingKept(ctx, r.ID, true); err != nil {
			return changed, fmt.Errorf("keeping the recordings of desktop %s: %w", desktopID, err)
		}
		s.markActive(desktopID, r.ID, true)
		changed = append(changed, r.ID)
	}
	return changed, nil
}

// Unkeep undoes KeepAll.
func (s *Service) Unkeep(ctx context.Context, desktopID string, ids []string) error {
	for _, id := range ids {
		if err := s.store.SetRecordingKept(ctx, id, false); err != nil {
			return err
		}
		s.markActive(desktopID, id, false)
	}
	return nil
}

// markActive keeps the recording under way, if it is id, in step with the
// store.
func (s *Service) markActive(desktopID, id string, kept bool) {
	s.mu.Lock()
	sess := s.active[desktopID]
	s.mu.Unlock()
	if sess == nil {
		return
	}
	sess.mu.Lock()
	if sess.rec != nil && sess.rec.ID == id {
		sess.rec.Kept = kept
	}
	sess.mu.Unlock()
}

// Find returns a recording by its id alone: its desktop may be deleted
// (the caller checks its Owner).
func (s *Service) Find(ctx context.Context, id string) (*Recording, error) {
	r, err := s.store.FindRecording(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.withLive(r), nil
}

// ListOwned returns an owner's recordings ("": everyone's), deleted
// desktops' included, oldest first.
func (s *Service) ListOwned(ctx context.Context, owner string) ([]*Recording, error) {
	list, err := s.store.OwnerRecordings(ctx, owner)
	if err != nil {
		return nil, err
	}
	for i, r := range list {
		list[i] = s.withLive(r)
	}
	return list, nil
}

// withLive is r as it is now, if it is under way.
func (s *Service) withLive(r *Recording) *Recording {
	a := s.Active(r.DesktopID)
	if a == nil || a.ID != r.ID {
		return r
	}
	a.DesktopName, a.DesktopDeleted, a.Kept = r.DesktopName, r.DesktopDeleted, r.Kept
	return a
}
