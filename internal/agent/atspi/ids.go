package atspi

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/bureau/bureau/internal/agent/wire"
	"github.com/godbus/dbus/v5"
)

// A node's id is its object, "bus|path", in unpadded base64url: opaque,
// and safe in a URL path. It stays valid while the application runs and
// keeps the object; after that it reads as gone (the application's
// unique bus name is never given to another while the bus lives).

func encodeID(o obj) string {
	return base64.RawURLEncoding.EncodeToString([]byte(o.bus + "|" + o.path))
}

// decodeID parses an id; a malformed one is a not_found Error.
func decodeID(id string) (obj, error) {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return obj{}, notNode(id)
	}
	name, path, ok := strings.Cut(string(b), "|")
	if !ok || !validBusName(name) || !dbus.ObjectPath(path).IsValid() {
		return obj{}, notNode(id)
	}
	return obj{bus: name, path: path}, nil
}

func notNode(id string) error {
	return &Error{Code: wire.CodeNotFound, Msg: fmt.Sprintf("%q is not a node id (ids come from GET …/ui and …/ui/find)", short(id))}
}

// validBusName: a unique name (":1.42") or a well-known one
// ("org.a11y.atspi.Registry"), as D-Bus allows them.
func validBusName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	unique := s[0] == ':'
	if unique {
		s = s[1:]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for i, r := range p {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '-' || r >= '0' && r <= '9' && (unique || i > 0)
			if !ok {
				return false
			}
		}
	}
	return true
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
