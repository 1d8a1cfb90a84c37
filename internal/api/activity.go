package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// passive are desktop routes that only look: polling them does not keep a
// desktop from being hibernated when idle.
var passive = map[string]bool{
	"/api/v1/desktops/:id":           true,
	"/api/v1/desktops/:id/events":    true,
	"/api/v1/desktops/:id/snapshots": true,
}

// touchActivity marks the desktop in :id as used by any other request to
// it, after the request was authenticated.
func (s *core) touchActivity(c *gin.Context) {
	c.Next()
	id := c.Param("id")
	if id == "" || !strings.HasPrefix(c.FullPath(), "/api/v1/desktops/:id") || c.Writer.Status() >= 400 {
		return
	}
	if c.Request.Method == http.MethodGet && (passive[c.FullPath()] || isPassive(c)) {
		return
	}
	s.screen.Touch(id)
}

// isPassive reports a GET that asked to only look (?passive=true): a web
// console's thumbnails must not keep desktops awake.
func isPassive(c *gin.Context) bool {
	return c.Request.Method == http.MethodGet && c.Query("passive") == "true"
}
