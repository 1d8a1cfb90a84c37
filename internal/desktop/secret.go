package desktop

import "time"

// Secret is what may be shown of a secret: never its value.
type Secret struct {
	Name string `json:"name"`
	// Scope is "owner" (every desktop of the owner may name it) or
	// "desktop" (DesktopID's only; it wins over an owner secret of the
	// same name there).
	Scope     string    `json:"scope"`
	DesktopID string    `json:"desktop_id,omitempty"`
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Secret scopes.
const (
	SecretOwner   = "owner"
	SecretDesktop = "desktop"
)
