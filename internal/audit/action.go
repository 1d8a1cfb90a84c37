package audit

import "strings"

// actions name the routes the general rule (ActionFor) names badly.
var actions = map[string]string{
	"POST /mcp":                         "mcp.call",
	"PUT /mcp":                          "mcp.call",
	"PATCH /mcp":                        "mcp.call",
	"DELETE /mcp":                       "mcp.call",
	"POST /api/v1/desktops/:id/console": "desktop.console.create",
	"DELETE /api/v1/desktops/:id/console/:token_id": "desktop.console.revoke",
	"DELETE /api/v1/desktops/:id/migrate":           "desktop.migrate.cancel",
	"DELETE /api/v1/hosts/:name/drain":              "host.undrain",
	"POST /api/v1/images":                           "image.import",
	"DELETE /api/v1/tokens/:id":                     "token.revoke",
	"DELETE /api/v1/desktops/:id/shares/:share":     "desktop.share.revoke",
	"DELETE /api/v1/desktops/:id/processes/:pid":    "desktop.process.signal",
	"POST /api/v1/desktops/:id/urls/:port/open":     "desktop.url.open",
	"POST /api/v1/events/stream-token":              "event.stream-token.create",
	"POST /api/v1/webhooks/:wid/rotate-secret":      "webhook.rotate-secret",
	"POST /api/v1/desktops/:id/windows/:wid":        "desktop.window.act",
	"POST /api/v1/desktops/:id/ui/:node":            "desktop.ui.act",
}

// ConsoleSession is the action of a console session (recorded when its
// WebSocket closes).
const ConsoleSession = "console.session"

// ActionFor names a call from its method and route pattern: the route's
// words, singular, joined by dots ("POST /api/v1/desktops/:id/stop" is
// desktop.stop), then what the method did to the last thing named unless a
// POST's last word is itself the verb (create, set, update, delete:
// "POST /api/v1/tokens" is token.create, "DELETE /api/v1/desktops/:id"
// desktop.delete). The port proxy's calls are desktop.port.proxy.
func ActionFor(method, route string) string {
	if a, ok := actions[method+" "+route]; ok {
		return a
	}
	if strings.HasPrefix(route, "/api/v1/desktops/:id/ports/:port/") {
		return "desktop.port.proxy"
	}
	if rest, ok := strings.CutPrefix(route, "/api/v1/desktops/:id/console/"); ok {
		// The console page's own calls, made with a console token.
		route = "/console/" + rest
	}
	var words []string
	endsInParam, plural := false, false
	for _, seg := range strings.Split(strings.TrimPrefix(route, "/api/v1"), "/") {
		switch {
		case seg == "":
		case seg[0] == ':' || seg[0] == '*':
			endsInParam = true
		default:
			w := singular(seg)
			words = append(words, w)
			endsInParam, plural = false, w != seg
		}
	}
	name := strings.Join(words, ".")
	if method == "POST" && !endsInParam && !plural {
		return name // the last word is the verb: desktop.stop
	}
	return name + "." + verb(method)
}

func verb(method string) string {
	switch method {
	case "POST":
		return "create"
	case "PUT":
		return "set"
	case "PATCH":
		return "update"
	case "DELETE":
		return "delete"
	}
	return strings.ToLower(method)
}

// singular turns a route's collection word into its thing.
func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "ies"):
		return strings.TrimSuffix(w, "ies") + "y"
	case strings.HasSuffix(w, "sses"):
		return strings.TrimSuffix(w, "es")
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"):
		return w
	case strings.HasSuffix(w, "s"):
		return strings.TrimSuffix(w, "s")
	}
	return w
}

// ObjectType is the thing a path parameter names: the route's word before
// it, singular ("snapshot" for :name in /snapshots/:name).
func ObjectType(route, param string) string {
	segs := strings.Split(route, "/")
	for i, seg := range segs {
		if seg == ":"+param && i > 0 {
			return singular(segs[i-1])
		}
	}
	return ""
}
