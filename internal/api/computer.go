package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/bureau/bureau/internal/computer"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/recording"
	"github.com/gin-gonic/gin"
)

// Computer drives a desktop's screen, mouse and keyboard.
type Computer interface {
	Run(ctx context.Context, domain string, req computer.Request) (*computer.Result, error)
	Screenshot(ctx context.Context, domain string, o computer.ShotOptions) (*computer.Image, error)
	// Forget drops what is cached about a screen (its size changed).
	Forget(domain string)
}

// computerHandlers see and drive desktops' screens: computer-use
// actions, screenshots, the screen's resolution.
type computerHandlers struct {
	*core
	computer Computer
	guest    Guest
	// recordings records a computer-use batch that asks for it (nil: none made).
	recordings Recordings
	// ui finds the accessibility nodes actions name as their element.
	ui UI
}

// computerAction runs computer-use actions (Anthropic or OpenAI shapes).
func (s *computerHandlers) computerAction(c *gin.Context) (reply, error) {
	var req computer.Request
	if err := decode(c, &req); err != nil {
		return reply{}, err
	}
	record, err := boolQuery(c, "record")
	if err != nil {
		return reply{}, err
	}
	d, err := s.ready(c, "use")
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
	els, err := s.resolveElements(c.Request.Context(), d.DomainName(), &req)
	if err != nil {
		return reply{}, err
	}
	res, err := s.computer.Run(c.Request.Context(), d.DomainName(), req)
	if err == nil && len(els) > 0 {
		s.elementResults(c.Request.Context(), d.DomainName(), res, els)
	}
	return reply{http.StatusOK, res}, err
}

// screenshot answers the screen as an image: PNG by default, JPEG with
// format=jpeg (quality=1..100), scaled with width/height, after the screen
// settles with settle=true. A passive=true screenshot (a watcher's
// thumbnail) neither wakes a sleeping desktop nor counts as use of it
// (awake, touchActivity).
func (s *computerHandlers) screenshot(c *gin.Context) {
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
	img, err := s.computer.Screenshot(c.Request.Context(), d.DomainName(), opts)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("X-Screen-Size", strconv.Itoa(img.Width)+"x"+strconv.Itoa(img.Height))
	if img.Scale > 0 {
		c.Header("X-Scale", strconv.FormatFloat(img.Scale, 'f', -1, 64))
	}
	if img.ScaleY > 0 {
		c.Header("X-Scale-Y", strconv.FormatFloat(img.ScaleY, 'f', -1, 64))
	}
	if img.Settled != nil && img.SettleMS != nil {
		c.Header("X-Settled", strconv.FormatBool(*img.Settled))
		c.Header("X-Settle-Ms", strconv.FormatInt(*img.SettleMS, 10))
	}
	c.Data(http.StatusOK, img.MediaType, img.Data)
}

func (s *computerHandlers) setResolution(c *gin.Context) (reply, error) {
	var body struct {
		Width  int `json:"width"`
		Height int `json:"height"`
	}
	if err := decode(c, &body); err != nil {
		return reply{}, err
	}
	d, err := s.ready(c, "resize the screen of")
	if err != nil {
		return reply{}, err
	}
	if err := s.guest.SetResolution(c.Request.Context(), d.DomainName(), body.Width, body.Height); err != nil {
		return reply{}, err
	}
	s.computer.Forget(d.DomainName())
	return reply{http.StatusOK, body}, nil
}

// batchTail is how long a recording made for one computer-use batch goes
// on after it (the screen's answer to the last action).
const batchTail = time.Second

// recordBatch makes sure the desktop is recorded while a computer-use
// batch runs: it starts a recording unless one is under way, and returns
// its id and what to call once the batch is done.
func (s *computerHandlers) recordBatch(c *gin.Context, d *desktop.Desktop) (string, func(), error) {
	if s.recordings == nil {
		return "", nil, errNoRecordings
	}
	if r := s.recordings.Active(d.ID); r != nil {
		return r.ID, func() {}, nil
	}
	r, err := s.recordings.Start(c.Request.Context(), d, recording.Options{}, actor(c))
	if err != nil {
		return "", nil, err
	}
	ctx := context.WithoutCancel(c.Request.Context())
	return r.ID, func() {
		time.AfterFunc(batchTail, func() {
			if cur := s.recordings.Active(d.ID); cur != nil && cur.ID == r.ID {
				if _, err := s.recordings.Stop(ctx, d.ID, "the computer-use batch ended"); err != nil {
					s.log.Warn("ending a batch's recording", "desktop", d.ID, "err", err)
				}
			}
		})
	}, nil
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
