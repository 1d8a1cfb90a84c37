package api

import (
	"net/http"

	"github.com/bureau/bureau/internal/api/openapi"
	"github.com/gin-gonic/gin"
)

// openAPI serves the API's contract (package openapi) as JSON to anyone,
// like /healthz: it describes the public API and holds no data.
func (s *siteHandlers) openAPI(c *gin.Context) {
	doc, err := openapi.JSON()
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "application/json", doc)
}
