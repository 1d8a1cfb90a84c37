package computer

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"time"

	"golang.org/x/image/draw"
)

// Image is a screenshot as returned to callers (data is base64 in JSON).
type Image struct {
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	// Settled is false when the screen was still changing when the wait
	// for it to settle ran out; SettleMS is how long the wait took.
	Settled  *bool  `json:"settled,omitempty"`
	SettleMS *int64 `json:"settle_ms,omitempty"`
	// Scale is image pixels per screen pixel (0.5: a 1280x800 screen shown
	// at 640x400); ScaleY is the vertical one when it differs (the image
	// has another aspect than what it shows).
	Scale  float64 `json:"scale,omitempty"`
	ScaleY float64 `json:"scale_y,omitempty"`
	// Coordinates says how the image relates to the coordinates actions
	// take (the Coordinates constants).
	Coordinates string `json:"coordinates,omitempty"`
}

// Image.Coordinates: "display", the image is the request's display (its
// pixels are the coordinates actions take); "screen", actions take screen
// coordinates (an image pixel is 1/Scale of them); "region", the image
// shows a zoom region only (pixel x is x0 + x*(x1-x0)/width in display
// coordinates).
const (
	CoordinatesDisplay = "display"
	CoordinatesScreen  = "screen"
	CoordinatesRegion  = "region"
)

// scaledFrom notes the scale of an image made from a srcW x srcH area of
// the screen: ScaleY only when the height is a pixel or more off what
// Scale alone would make it.
func (img *Image) scaledFrom(srcW, srcH int) {
	round := func(f float64) float64 { return math.Round(f*1e6) / 1e6 }
	sx := float64(img.Width) / float64(srcW)
	img.Scale, img.ScaleY = round(sx), 0
	if math.Abs(float64(srcH)*sx-float64(img.Height)) >= 1 {
		img.ScaleY = round(float64(img.Height) / float64(srcH))
	}
}

// ShotOptions shape a screenshot.
type ShotOptions struct {
	// Format is "png" (default) or "jpeg"; Quality is JPEG's 1..100.
	Format  string
	Quality int
	// Width and Height scale the image (one alone keeps the aspect).
	Width, Height int
	// Settle waits for the screen to stop changing first.
	Settle bool
	// Source "display" reads the hypervisor's screen dump instead of the
	// live framebuffer ("" chooses: the framebuffer when there is one).
	Source string
}

// SourceDisplay asks for the hypervisor's screen dump (ShotOptions.Source).
const SourceDisplay = "display"

// sizeTTL is how long a seen screen size is trusted; a resolution change
// through bureau forgets it at once.
const sizeTTL = 5 * time.Second

// screenSize is the real screen's size, from a recent screenshot.
func (c *Computer) screenSize(ctx context.Context, domain string) (int, int, error) {
	c.mu.Lock()
	s, ok := c.sizes[domain]
	c.mu.Unlock()
	if ok && time.Since(s.at) < sizeTTL {
		return s.w, s.h, nil
	}
	if _, err := c.capture(ctx, domain, ""); err != nil {
		return 0, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sizes[domain].w, c.sizes[domain].h, nil
}

// Forget drops what is cached about a domain's screen and keyboard (after
// a resolution change or when the desktop stops).
func (c *Computer) Forget(domain string) {
	c.mu.Lock()
	delete(c.sizes, domain)
	delete(c.cursors, domain)
	delete(c.keymaps, domain)
	c.mu.Unlock()
	c.kbd.set(domain, false, false)
}

// capture takes one PNG screenshot and records the screen size.
func (c *Computer) capture(ctx context.Context, domain, source string) ([]byte, error) {
	screen := c.screen
	if source == SourceDisplay && c.Display != nil {
		screen = c.Display
	}
	b, mime, err := screen.Screenshot(ctx, domain)
	if err != nil {
		return nil, err
	}
	if mime != "image/png" {
		return nil, fmt.Errorf("screenshot came as %s, want image/png", mime)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	c.sawSize(domain, cfg.Width, cfg.Height)
	return b, nil
}

func (c *Computer) sawSize(domain string, w, h int) {
	c.mu.Lock()
	c.sizes[domain] = sizeSeen{w, h, time.Now()}
	c.mu.Unlock()
}

// settled is a screen that was waited on: its pixels (a live screen's) or
// PNG (a screen dump's), whether it settled and how long the wait took.
type settled struct {
	pixels  image.Image
	png     []byte
	settled bool
	took    time.Duration
}

// encode shapes the settled screen as opts ask and says how it settled.
func (s *settled) encode(opts ShotOptions, crop *image.Rectangle) (*Image, error) {
	var img *Image
	var err error
	if s.pixels != nil {
		img, err = encodeImage(s.pixels, opts, crop)
	} else {
		img, err = encode(s.png, opts, crop)
	}
	if err != nil {
		return nil, err
	}
	ms := s.took.Milliseconds()
	img.Settled, img.SettleMS = &s.settled, &ms
	return img, nil
}

// settle waits for the screen to stop changing: on the live framebuffer's
// damage reports when there is one (its pixels, not encoded yet), else by
// screenshots until two taken SettleFor apart are identical or SettleMax
// runs out.
func (c *Computer) settle(ctx context.Context, domain, source string) (*settled, error) {
	start := time.Now()
	if live, ok := c.screen.(LiveScreen); ok && source != SourceDisplay {
		m, ok, err := live.Settle(ctx, domain, c.SettleFor, c.SettleMax)
		if err == nil {
			c.sawSize(domain, m.Bounds().Dx(), m.Bounds().Dy())
			return &settled{pixels: m, settled: ok, took: time.Since(start)}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	b, ok, err := c.poll(ctx, domain, source)
	if err != nil {
		return nil, err
	}
	return &settled{png: b, settled: ok, took: time.Since(start)}, nil
}

// poll takes screenshots until two taken SettleFor apart are identical,
// or SettleMax runs out; it returns the last one.
func (c *Computer) poll(ctx context.Context, domain, source string) ([]byte, bool, error) {
	deadline := time.Now().Add(c.SettleMax)
	last, err := c.capture(ctx, domain, source)
	if err != nil {
		return nil, false, err
	}
	since := time.Now()
	for time.Now().Before(deadline) {
		if err := sleep(ctx, min(c.SettleFor/3, time.Until(deadline))); err != nil {
			return nil, false, err
		}
		b, err := c.capture(ctx, domain, source)
		if err != nil {
			return nil, false, err
		}
		if !bytes.Equal(b, last) {
			last, since = b, time.Now()
			continue
		}
		if time.Since(since) >= c.SettleFor {
			return b, true, nil
		}
	}
	return last, false, nil
}

// settledImage is a settled screenshot in the caller's display space,
// or a region of it (in display coordinates) zoomed to the display size.
func (c *Computer) settledImage(ctx context.Context, domain string, sc *scaler, region []int) (*Image, error) {
	st, err := c.settle(ctx, domain, "")
	if err != nil {
		return nil, err
	}
	opts := ShotOptions{Width: sc.w, Height: sc.h}
	if region == nil {
		img, err := st.encode(opts, nil)
		if err != nil {
			return nil, err
		}
		img.Coordinates = CoordinatesDisplay
		return img, nil
	}
	tl := sc.real(Point{region[0], region[1]})
	br := sc.real(Point{region[2] - 1, region[3] - 1})
	crop := image.Rect(tl.X, tl.Y, br.X+1, br.Y+1)
	// Fit the region into the display, keeping its aspect.
	scale := min(float64(sc.w)/float64(crop.Dx()), float64(sc.h)/float64(crop.Dy()))
	opts.Width, opts.Height = max(1, int(float64(crop.Dx())*scale)), max(1, int(float64(crop.Dy())*scale))
	img, err := st.encode(opts, &crop)
	if err != nil {
		return nil, err
	}
	img.Coordinates = CoordinatesRegion
	return img, nil
}

// Screenshot takes a screenshot of domain shaped by opts; its coordinates
// are the screen's.
func (c *Computer) Screenshot(ctx context.Context, domain string, opts ShotOptions) (*Image, error) {
	img, err := c.screenshot(ctx, domain, opts)
	if err != nil {
		return nil, err
	}
	img.Coordinates = CoordinatesScreen
	return img, nil
}

func (c *Computer) screenshot(ctx context.Context, domain string, opts ShotOptions) (*Image, error) {
	if opts.Settle {
		st, err := c.settle(ctx, domain, opts.Source)
		if err != nil {
			return nil, err
		}
		return st.encode(opts, nil)
	}
	// A scaled or JPEG screenshot from the live framebuffer's pixels,
	// without a PNG encoded and decoded between.
	if live, ok := c.screen.(LiveScreen); ok && opts.Source != SourceDisplay && (opts.Format == "jpeg" || opts.Width != 0 || opts.Height != 0) {
		m, err := live.Frame(ctx, domain)
		if err == nil {
			c.sawSize(domain, m.Bounds().Dx(), m.Bounds().Dy())
			return encodeImage(m, opts, nil)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	b, err := c.capture(ctx, domain, opts.Source)
	if err != nil {
		return nil, err
	}
	return encode(b, opts, nil)
}

// encode crops, scales and re-encodes a PNG screenshot; an untouched PNG
// is passed through as it came.
func encode(src []byte, opts ShotOptions, crop *image.Rectangle) (*Image, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	if w, h := fit(opts, cfg.Width, cfg.Height); (opts.Format == "" || opts.Format == "png") && crop == nil && w == cfg.Width && h == cfg.Height {
		return &Image{MediaType: "image/png", Data: src, Width: w, Height: h, Scale: 1}, nil
	}
	m, err := png.Decode(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return encodeImage(m, opts, crop)
}

// fit is the output size opts ask for from a bw×bh picture (one side
// given keeps the aspect).
func fit(opts ShotOptions, bw, bh int) (int, int) {
	w, h := opts.Width, opts.Height
	switch {
	case w == 0 && h == 0:
		return bw, bh
	case w == 0:
		return max(1, bw*h/bh), h
	case h == 0:
		return w, max(1, bh*w/bw)
	}
	return w, h
}

// encodeImage crops, scales and encodes a screen's pixels.
func encodeImage(m image.Image, opts ShotOptions, crop *image.Rectangle) (*Image, error) {
	bw, bh := m.Bounds().Dx(), m.Bounds().Dy()
	if crop != nil {
		bw, bh = crop.Dx(), crop.Dy()
	}
	w, h := fit(opts, bw, bh)
	format := opts.Format
	if format == "" {
		format = "png"
	}
	if crop != nil {
		m = subImage(m, *crop)
	}
	if w != m.Bounds().Dx() || h != m.Bounds().Dy() {
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.ApproxBiLinear.Scale(dst, dst.Bounds(), m, m.Bounds(), draw.Src, nil)
		m = dst
	}
	var out bytes.Buffer
	var err error
	switch format {
	case "png":
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, m)
	case "jpeg":
		q := opts.Quality
		if q == 0 {
			q = 80
		}
		err = jpeg.Encode(&out, m, &jpeg.Options{Quality: q})
	default:
		return nil, invalid("format", "must be png or jpeg")
	}
	if err != nil {
		return nil, fmt.Errorf("encode screenshot: %w", err)
	}
	img := &Image{MediaType: "image/" + format, Data: out.Bytes(), Width: w, Height: h}
	img.scaledFrom(bw, bh)
	return img, nil
}

func subImage(m image.Image, r image.Rectangle) image.Image {
	if s, ok := m.(interface {
		SubImage(image.Rectangle) image.Image
	}); ok {
		return s.SubImage(r.Add(m.Bounds().Min))
	}
	return m
}

// ValidateShot checks screenshot options from a request.
func ValidateShot(o ShotOptions) error {
	switch o.Format {
	case "", "png", "jpeg":
	default:
		return invalid("format", "must be png or jpeg")
	}
	if o.Source != "" && o.Source != SourceDisplay {
		return invalid("source", "must be display (the hypervisor's screen dump) or empty (the live framebuffer when there is one)")
	}
	if o.Quality != 0 && (o.Quality < 1 || o.Quality > 100 || o.Format != "jpeg") {
		return invalid("quality", "is 1..100 and only for jpeg")
	}
	if o.Width < 0 || o.Height < 0 || o.Width > maxDisplay || o.Height > maxDisplay {
		return invalid("width", fmt.Sprintf("width and height must be 0..%d", maxDisplay))
	}
	return nil
}
