package computer

import "fmt"

// maxDisplay bounds the display size a caller may ask for.
const maxDisplay = 8192

// scaler maps the caller's display space onto the real screen. A display
// pixel covers a block of real pixels; it maps to the block's middle, so
// a click lands where the model aimed and scaling back returns the pixel.
type scaler struct {
	w, h int // display
	W, H int // real screen
}

func newScaler(d *Size, W, H int) (*scaler, error) {
	if d == nil || d.Width == 0 && d.Height == 0 {
		return &scaler{W, H, W, H}, nil
	}
	if d.Width < 1 || d.Height < 1 || d.Width > maxDisplay || d.Height > maxDisplay {
		return nil, invalid("display", fmt.Sprintf("width and height must be 1..%d", maxDisplay))
	}
	return &scaler{d.Width, d.Height, W, H}, nil
}

func (s *scaler) display() Size { return Size{s.w, s.h} }

func (s *scaler) scaled() bool { return s.w != s.W || s.h != s.H }

// real maps a display pixel to the screen pixel under its middle.
func (s *scaler) real(p Point) Point {
	return Point{mapAxis(p.X, s.w, s.W), mapAxis(p.Y, s.h, s.H)}
}

// toDisplay maps a screen pixel to the display pixel that covers it.
func (s *scaler) toDisplay(p Point) Point {
	return Point{mapAxis(p.X, s.W, s.w), mapAxis(p.Y, s.H, s.h)}
}

// mapAxis maps pixel x of an axis of size from to the pixel of an axis of
// size to that contains x's middle.
func mapAxis(x, from, to int) int {
	if from == to {
		return x
	}
	return min((2*x+1)*to/(2*from), to-1)
}

// check refuses coordinates outside the display, naming its bounds.
func (s *scaler) check(st step) error {
	pts := st.path
	if st.at != nil {
		pts = append([]Point{*st.at}, pts...)
	}
	for _, p := range pts {
		if p.X < 0 || p.Y < 0 || p.X >= s.w || p.Y >= s.h {
			return invalid("coordinate", fmt.Sprintf("(%d, %d) is outside the screen: x must be 0..%d and y 0..%d",
				p.X, p.Y, s.w-1, s.h-1))
		}
	}
	if r := st.region; r != nil {
		if r[0] < 0 || r[1] < 0 || r[2] > s.w || r[3] > s.h {
			return invalid("region", fmt.Sprintf("[%d, %d, %d, %d] is outside the screen %dx%d", r[0], r[1], r[2], r[3], s.w, s.h))
		}
	}
	return nil
}
