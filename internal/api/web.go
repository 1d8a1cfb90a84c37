package api

import (
	"context"
	"html/template"
	"io/fs"
	"net/http"

	"github.com/gin-gonic/gin"
)

// siteHandlers serve what is not one feature's: the web front end, the
// API's contract, /api/v1/info and /metrics.
type siteHandlers struct {
	*core
	// about is Deps.Info, served by info.
	about map[string]string
	// web is Deps.Web (nil: no front end); consoles checks the console
	// page's token.
	web      fs.FS
	consoles Consoles
	// prometheus is Deps.Metrics (nil: no /metrics).
	prometheus http.Handler
	// tls is Deps.TLS (nil: plain HTTP).
	tls TLSState
	// certNames is Deps.CertificateNames (nil: no /tls/allowed).
	certNames func(ctx context.Context, name string) error
}

// metrics serves /metrics (Prometheus) to admins.
func (s *siteHandlers) metrics(c *gin.Context) {
	if err := requireAdmin(c); err != nil {
		s.fail(c, err)
		return
	}
	s.prometheus.ServeHTTP(c.Writer, c.Request)
}

// routeWeb serves the web console at /, its assets under /static and the
// console page at /console/{id}. The pages hold no data: the web console
// asks for an API token and the console page opens only with a console
// token, checked here before the page is served.
func (s *siteHandlers) routeWeb(r *gin.Engine) {
	if s.web == nil {
		return
	}
	static, err := fs.Sub(s.web, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServer(http.FS(static))
	r.GET("/static/*path", func(c *gin.Context) {
		c.Header("X-Content-Type-Options", "nosniff")
		c.Request.URL.Path = c.Param("path")
		files.ServeHTTP(c.Writer, c.Request)
	})
	page := func(name string) gin.HandlerFunc {
		return func(c *gin.Context) {
			b, err := fs.ReadFile(static, name)
			if err != nil {
				s.fail(c, err)
				return
			}
			c.Header("Cache-Control", "no-store")
			c.Header("X-Frame-Options", "DENY")
			c.Header("Referrer-Policy", "no-referrer") // the console URL carries its token
			c.Data(http.StatusOK, "text/html; charset=utf-8", b)
		}
	}
	r.GET("/", page("index.html"))
	r.GET("/docs", page("docs.html"))
	console := page("console.html")
	r.GET("/console/:id", func(c *gin.Context) {
		if _, err := s.consoles.Authenticate(c.Request.Context(), c.Param("id"), c.Query("token")); err != nil {
			status, body := classify(err)
			c.Status(status)
			c.Header("Content-Type", "text/html; charset=utf-8")
			deniedPage.Execute(c.Writer, body.Message)
			return
		}
		console(c)
	})
}

var deniedPage = template.Must(template.New("denied").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bureau console</title>
<style>body{font:15px system-ui,sans-serif;background:#111827;color:#e5e7eb;display:grid;place-items:center;height:100vh;margin:0}
main{max-width:32rem;padding:2rem;border:1px solid #374151;border-radius:.5rem;background:#1f2937}h1{font-size:1.1rem;margin:0 0 .5rem}</style></head>
<body><main><h1>This console link cannot be used</h1><p>{{.}}</p><p>Open the console again from the web console or ask for a new link.</p></main></body></html>
`))
