package desktop

import "time"

// Secret is what may be shown of a secret: never its value.
type Secret struct {
	Name string
	// Scope is "owner" (every desktop of the owner may name it) or
	// "desktop" (DesktopID's only; it wins over an owner secret of the
	// same name there).
	Scope     string
	DesktopID string
	Owner     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Desktops are where an owner secret reaches without its owner: the
	// desktop tokens of these desktops may name it, and their services get
	// it at every boot ("*": every desktop of the owner). The owner's own
	// calls may name it anywhere.
	Desktops []string
}

// AllDesktops in Secret.Desktops allows an owner secret on every desktop.
const AllDesktops = "*"

// Secret scopes.
const (
	SecretOwner   = "owner"
	SecretDesktop = "desktop"
)
