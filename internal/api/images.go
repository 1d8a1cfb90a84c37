package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/images"
	"github.com/gin-gonic/gin"
)

// Images manages base images.
type Images interface {
	List(ctx context.Context) ([]*desktop.Image, error)
	Delete(ctx context.Context, name string) error
	CheckImport(ctx context.Context, req images.ImportRequest) error
	Import(ctx context.Context, req images.ImportRequest, progress images.ProgressFunc) (*desktop.Image, error)
}

// imageHandlers list, import and delete base images.
type imageHandlers struct {
	*core
	images Images
}

func (s *imageHandlers) listImages(c *gin.Context) (reply, error) {
	ims, err := s.images.List(c.Request.Context())
	if err != nil {
		return reply{}, err
	}
	if ims == nil {
		ims = []*desktop.Image{}
	}
	return reply{http.StatusOK, gin.H{"images": ims}}, nil
}

func (s *imageHandlers) deleteImage(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	if err := s.images.Delete(c.Request.Context(), c.Param("name")); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}

// importImage validates the request, then streams newline-delimited JSON:
// {"progress":…} lines while it works and a last {"image":…} or
// {"error":…} line. Closing the connection cancels the import. The 200 is
// sent with the first line, so an import that fails before reporting any
// progress (an image refused by its header, say) answers with the error's
// own status, like any other request.
func (s *imageHandlers) importImage(c *gin.Context) (reply, error) {
	if err := requireAdmin(c); err != nil {
		return reply{}, err
	}
	var req images.ImportRequest
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	if err := s.images.CheckImport(c.Request.Context(), req); err != nil {
		return reply{}, err
	}
	enc := json.NewEncoder(c.Writer)
	started := false
	flush := func(v any) {
		if !started {
			started = true
			c.Header("Content-Type", "application/x-ndjson")
			c.Status(http.StatusOK)
		}
		enc.Encode(v)
		c.Writer.Flush()
	}
	im, err := s.images.Import(c.Request.Context(), req, func(p images.Progress) { flush(gin.H{"progress": p}) })
	if err != nil {
		s.log.Warn("image import failed", "name", req.Name, "err", err)
		if !started {
			return reply{}, err
		}
		_, body := classify(err)
		flush(gin.H{"error": body})
		return reply{}, nil
	}
	// The stream is written here, not by handle: the image goes through
	// forCaller as a reply's body would.
	flush(s.forCaller(c, gin.H{"image": im}))
	return reply{}, nil
}
