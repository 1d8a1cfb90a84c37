package computer

// Rect is a rectangle of pixels.
type Rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// DisplayRect maps r, a rectangle of a screen of size screen (a window's
// bounds, say), into the display the caller's coordinates refer to (as a
// Request's Display; nil or empty: the screen itself): the display pixels
// that cover the part of r on the screen and whose clicks land in r
// (but for an r smaller than a display pixel). ok is false when none of r is on the screen.
func DisplayRect(r Rect, screen Size, display *Size) (out Rect, ok bool, err error) {
	sc, err := newScaler(display, screen.Width, screen.Height)
	if err != nil {
		return Rect{}, false, err
	}
	x0, y0 := max(r.X, 0), max(r.Y, 0)
	x1, y1 := min(r.X+r.Width, screen.Width)-1, min(r.Y+r.Height, screen.Height)-1
	if x1 < x0 || y1 < y0 {
		return Rect{}, false, nil
	}
	a, b := sc.toDisplay(Point{x0, y0}), sc.toDisplay(Point{x1, y1})
	// The display pixels at the edges may map to a screen pixel just
	// outside r (their middle): take them in by one, unless r is smaller
	// than a display pixel.
	if in := sc.real(a); in.X < x0 && a.X < b.X {
		a.X++
	}
	if in := sc.real(a); in.Y < y0 && a.Y < b.Y {
		a.Y++
	}
	if in := sc.real(b); in.X > x1 && b.X > a.X {
		b.X--
	}
	if in := sc.real(b); in.Y > y1 && b.Y > a.Y {
		b.Y--
	}
	return Rect{X: a.X, Y: a.Y, Width: b.X - a.X + 1, Height: b.Y - a.Y + 1}, true, nil
}
