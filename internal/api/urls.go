package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/mcptools"
	"github.com/bureau/bureau/internal/preview"
	"github.com/gin-gonic/gin"
)

// URLs manages who may open a desktop's live URLs.
type URLs interface {
	Share(ctx context.Context, d *desktop.Desktop, port int, ttl time.Duration, readOnly bool, by preview.Maker) (string, *desktop.Share, error)
	Shares(ctx context.Context, desktopID string) ([]*desktop.Share, error)
	Revoke(ctx context.Context, desktopID, id string) error
	SetPublic(ctx context.Context, desktopID string, port int, public bool, by preview.Maker) error
	Forget(ctx context.Context, desktopID string) error
}

// urlHandlers manage desktops' live URLs: which ports are public, share
// links, and links that sign a browser in.
type urlHandlers struct {
	*core
	previews Previews
	urls     URLs
	// services name the ports a running desktop serves.
	services Services
	links    *liveLinks
}

// urlRoutes serves live URLs' path form (previewPath) and their management.
func (s *urlHandlers) urlRoutes(r *gin.Engine, v1 *gin.RouterGroup, previewPath gin.HandlerFunc) {
	r.Any("/preview/:id/:port/*path", previewPath)
	v1.GET("/desktops/:id/urls", s.handle(s.listURLs))
	v1.PUT("/desktops/:id/urls/:port", s.handle(s.setURL))
	v1.POST("/desktops/:id/urls/:port/open", s.handle(s.openURL))
	v1.GET("/desktops/:id/shares", s.handle(s.listShares))
	v1.POST("/desktops/:id/shares", s.handle(s.createShare))
	v1.DELETE("/desktops/:id/shares/:share", s.handle(s.revokeShare))
}

func (s *urlHandlers) urlOf(c *gin.Context, d *desktop.Desktop, port int) apiv1.URL {
	u, p := s.links.previewURL(c, d.ID, port)
	return apiv1.URL{Port: port, URL: u, PathURL: p}
}

func urlPort(c *gin.Context) (int, error) {
	port, err := strconv.Atoi(c.Param("port"))
	if err != nil || port < 1 || port > 65535 {
		return 0, &desktop.ValidationError{Field: "port", Message: "must be 1..65535"}
	}
	return port, nil
}

// listURLs lists the desktop's live URLs: its services' ports (while it
// runs), its public ports and the ports it has share links for.
func (s *urlHandlers) listURLs(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	ctx := c.Request.Context()
	byPort := map[int]*apiv1.URL{}
	var order []int
	get := func(p int) *apiv1.URL {
		if u := byPort[p]; u != nil {
			return u
		}
		u := s.urlOf(c, d, p)
		byPort[p] = &u
		order = append(order, p)
		return &u
	}
	if d.State == desktop.StateRunning && s.services != nil {
		if list, err := s.services.Services(ctx, d.DomainName()); err == nil {
			for _, sv := range list {
				if sv.Port > 0 {
					get(sv.Port).Service = sv.Name
				}
			}
		}
	}
	ports, err := s.previews.PublicPorts(ctx, d.ID)
	if err != nil {
		return reply{}, err
	}
	for _, p := range ports {
		get(p).Public = true
	}
	shares, err := s.urls.Shares(ctx, d.ID)
	if err != nil {
		return reply{}, err
	}
	now := time.Now()
	for _, l := range shares {
		if l.Usable(now) {
			get(l.Port).Shares++
		}
	}
	out := make([]apiv1.URL, 0, len(order))
	for _, p := range order {
		out = append(out, *byPort[p])
	}
	return reply{http.StatusOK, gin.H{"urls": out}}, nil
}

// setURL makes a port's URL public ({"public": true}: anyone with the URL)
// or private again.
func (s *urlHandlers) setURL(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	port, err := urlPort(c)
	if err != nil {
		return reply{}, err
	}
	var body struct {
		Public *bool `json:"public"`
	}
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	if body.Public == nil {
		return reply{}, &desktop.ValidationError{Field: "public", Message: "say true or false"}
	}
	if err := s.urls.SetPublic(c.Request.Context(), d.ID, port, *body.Public, maker(c)); err != nil {
		return reply{}, err
	}
	u := s.urlOf(c, d, port)
	u.Public = *body.Public
	return reply{http.StatusOK, u}, nil
}

// openURL returns a link that signs a browser in to a port's URL as the
// caller (a one-time code, good for a minute; the browser then keeps a
// cookie for that URL only, for 12 hours or until the token is revoked).
func (s *urlHandlers) openURL(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	port, err := urlPort(c)
	if err != nil {
		return reply{}, err
	}
	tok := caller(c)
	if !tokenReaches(tok, d) {
		return reply{}, desktop.ErrForbidden
	}
	code := s.previews.LoginCode(preview.Claims{Kind: preview.KindOwner, Desktop: d.ID, Port: port, Sub: tok.ID,
		Exp: time.Now().Add(preview.SessionTTL).Unix()})
	u := s.urlOf(c, d, port)
	link := u.PathURL
	if u.URL != "" {
		link = u.URL
	}
	return reply{http.StatusOK, gin.H{"port": port, "url": link + "?" + loginParam + "=" + code, "expires_in_s": 60}}, nil
}

// maker is the caller as the maker of a share link, public port or
// console token, which lives no longer than its token and is revoked with
// it.
func maker(c *gin.Context) preview.Maker {
	t := caller(c)
	return preview.Maker{Actor: actor(c), Token: t.ID, Until: t.ExpiresAt}
}

func (s *urlHandlers) listShares(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	list, err := s.urls.Shares(c.Request.Context(), d.ID)
	return reply{http.StatusOK, gin.H{"shares": list}}, err
}

// createShare makes a share link: {"port", "ttl_s" (default a day, at
// most 30 days), "read_only"}. The link (with its secret) is shown once.
func (s *urlHandlers) createShare(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	var body struct {
		Port     int  `json:"port"`
		TTLS     int  `json:"ttl_s"`
		ReadOnly bool `json:"read_only"`
	}
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	secret, l, err := s.urls.Share(c.Request.Context(), d, body.Port, time.Duration(body.TTLS)*time.Second, body.ReadOnly, maker(c))
	if err != nil {
		return reply{}, err
	}
	u := s.urlOf(c, d, l.Port)
	out := apiv1.ShareCreated{Share: apiv1.FromShare(l), PathURL: u.PathURL + "?" + shareParam + "=" + secret}
	if u.URL != "" {
		out.URL = u.URL + "?" + shareParam + "=" + secret
	}
	return reply{http.StatusCreated, out}, nil
}

func (s *urlHandlers) revokeShare(c *gin.Context) (reply, error) {
	d, err := s.owned(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.urls.Revoke(c.Request.Context(), d.ID, c.Param("share")); err != nil {
		return reply{}, err
	}
	return reply{http.StatusNoContent, nil}, nil
}

// mcpOrigin tells in-process MCP tools the host and scheme the client
// reached bureau by, so the URLs they return open from the client's side.
func (s *core) mcpOrigin(c *gin.Context) {
	c.Request.Header.Set(mcptools.HostHeader, s.origin.host(c))
	c.Request.Header.Set(mcptools.ProtoHeader, s.origin.scheme(c))
}
