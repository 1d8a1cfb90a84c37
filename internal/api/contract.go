package api

import (
	"encoding/json"
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
	if s.origin.public != nil {
		// Clients generated from it call the address people use.
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			s.fail(c, err)
			return
		}
		m["servers"] = []map[string]string{{"url": s.origin.public.String(), "description": "this bureau"}}
		if doc, err = json.Marshal(m); err != nil {
			s.fail(c, err)
			return
		}
	}
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "application/json", doc)
}
