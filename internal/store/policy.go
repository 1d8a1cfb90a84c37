package store

import (
	"encoding/json"

	"github.com/bureau/bureau/internal/desktop"
)

// storedPolicy is a desktop's network policy as the network_policy column
// holds it: JSON with these names. It is the store's own type, not the
// domain's, because the rows written so far must keep reading whatever
// the domain type becomes.
type storedPolicy struct {
	AllowOut []string `json:"allow_out"`
	DenyOut  []string `json:"deny_out"`
	DenyDNS  bool     `json:"deny_dns,omitempty"`
}

// policyJSON is p as the column holds it; the default policy is "".
func policyJSON(p desktop.NetworkPolicy) string {
	if p.Default() {
		return ""
	}
	b, _ := json.Marshal(storedPolicy{AllowOut: p.AllowOut, DenyOut: p.DenyOut, DenyDNS: p.DenyDNS})
	return string(b)
}

// parsePolicy reads the column back ("" is the default policy).
func parsePolicy(s string) (desktop.NetworkPolicy, error) {
	if s == "" {
		return desktop.NetworkPolicy{}, nil
	}
	var p storedPolicy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return desktop.NetworkPolicy{}, err
	}
	return desktop.NetworkPolicy{AllowOut: p.AllowOut, DenyOut: p.DenyOut, DenyDNS: p.DenyDNS}, nil
}
