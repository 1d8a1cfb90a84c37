package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/gin-gonic/gin"
)

// Computer drives a desktop's screen, mouse and keyboard.
type Computer interface {
	Run(ctx context.Context, domain string, req computer.Request) (*computer.Result, error)
	Screenshot(ctx context.Context, domain string, o computer.ShotOptions) (*computer.Image, error)
	// Forget drops what is cached about a screen (its size changed).
	Forget(domain string)
}

// running returns the caller's desktop, woken if it was paused or
// hibernated, or a 409 naming its state.
func (s *server) running(c *gin.Context, op desktop.Op) (*desktop.Desktop, error) {
	d, err := s.awake(c)
	if err == nil && d.State != desktop.StateRunning {
		err = &desktop.TransitionError{Op: op, State: d.State}
	}
	return d, err
}

// computerAction runs computer-use actions (Anthropic or OpenAI shapes).
func (s *server) computerAction(c *gin.Context) (reply, error) {
	var req computer.Request
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	record, err := boolQuery(c, "record")
	if err != nil {
		return reply{}, err
	}
	d, err := s.running(c, "use")
	if err != nil {
		return reply{}, err
	}
	if record {
		rid, done, err := s.recordBatch(c, d)
		if err != nil {
			return reply{}, err
		}
		defer done()
		c.Header("X-Bureau-Recording", rid)
	}
	res, err := s.Computer.Run(c.Request.Context(), d.DomainName(), req)
	return reply{http.StatusOK, res}, err
}

// screenshot answers the screen as an image: PNG by default, JPEG with
// format=jpeg (quality=1..100), scaled with width/height, after the screen
// settles with settle=true. A passive=true screenshot (a watcher's
// thumbnail) neither wakes a sleeping desktop nor counts as use of it
// (awake, touchActivity).
func (s *server) screenshot(c *gin.Context) {
	opts, err := shotOptions(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	d, err := s.running(c, "screenshot")
	if err != nil {
		s.fail(c, err)
		return
	}
	img, err := s.Computer.Screenshot(c.Request.Context(), d.DomainName(), opts)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("X-Screen-Size", strconv.Itoa(img.Width)+"x"+strconv.Itoa(img.Height))
	if img.Settled != nil && img.SettleMS != nil {
		c.Header("X-Settled", strconv.FormatBool(*img.Settled))
		c.Header("X-Settle-Ms", strconv.FormatInt(*img.SettleMS, 10))
	}
	c.Data(http.StatusOK, img.MediaType, img.Data)
}

func shotOptions(c *gin.Context) (computer.ShotOptions, error) {
	o := computer.ShotOptions{Format: c.Query("format"), Source: c.Query("source")}
	for name, dst := range map[string]*int{"quality": &o.Quality, "width": &o.Width, "height": &o.Height} {
		v := c.Query(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return o, &desktop.ValidationError{Field: name, Message: "must be a whole number"}
		}
		*dst = n
	}
	settle, err := boolQuery(c, "settle")
	if err != nil {
		return o, err
	}
	o.Settle = settle
	return o, computer.ValidateShot(o)
}
