package recording

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// Matroska element IDs (with their length markers) on the way to the
// segment's duration.
const (
	idSegment       = 0x18538067
	idInfo          = 0x1549A966
	idTimecodeScale = 0x2AD7B1
	idDuration      = 0x4489
)

// lengthen makes a finished WebM file last at least d: ffmpeg's last
// kept frame can be up to a second before the recording's end (mpdecimate
// drops the unchanged frames after it), and the file's duration ends with
// it. The segment's Duration is rewritten in place (the last frame then
// shows until d). A file that lasts d or longer is left alone.
func lengthen(path string, d time.Duration) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	off, size, scale, err := findDuration(f)
	if err != nil {
		return fmt.Errorf("the WebM file's duration: %w", err)
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, off); err != nil {
		return err
	}
	var cur float64
	if size == 4 {
		cur = float64(math.Float32frombits(binary.BigEndian.Uint32(buf)))
	} else {
		cur = math.Float64frombits(binary.BigEndian.Uint64(buf))
	}
	want := float64(d.Nanoseconds()) / float64(scale)
	if cur >= want {
		return nil
	}
	if size == 4 {
		binary.BigEndian.PutUint32(buf, math.Float32bits(float32(want)))
	} else {
		binary.BigEndian.PutUint64(buf, math.Float64bits(want))
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		return err
	}
	return f.Close()
}

// findDuration walks a Matroska file to its segment's Info and answers
// where the Duration float lies, its size (4 or 8) and the timestamp scale
// (ns per unit).
func findDuration(r io.ReaderAt) (off int64, size int, scale int64, err error) {
	pos := int64(0)
	// The EBML header, then the segment.
	for {
		id, n, dataOff, err := element(r, pos)
		if err != nil {
			return 0, 0, 0, err
		}
		if id == idSegment {
			pos = dataOff
			break
		}
		if n < 0 {
			return 0, 0, 0, errors.New("an element of unknown size before the segment")
		}
		pos = dataOff + n
	}
	// The segment's children, up to Info.
	for range 64 {
		id, n, dataOff, err := element(r, pos)
		if err != nil {
			return 0, 0, 0, err
		}
		if n < 0 {
			return 0, 0, 0, errors.New("an element of unknown size in the segment")
		}
		if id != idInfo {
			pos = dataOff + n
			continue
		}
		scale, off, size = 1_000_000, -1, 0
		for p := dataOff; p < dataOff+n; {
			cid, cn, cOff, err := element(r, p)
			if err != nil {
				return 0, 0, 0, err
			}
			switch {
			case cid == idDuration && (cn == 4 || cn == 8):
				off, size = cOff, int(cn)
			case cid == idTimecodeScale && cn >= 1 && cn <= 8:
				b := make([]byte, cn)
				if _, err := r.ReadAt(b, cOff); err != nil {
					return 0, 0, 0, err
				}
				scale = 0
				for _, x := range b {
					scale = scale<<8 | int64(x)
				}
			}
			p = cOff + cn
		}
		if off < 0 || scale <= 0 {
			return 0, 0, 0, errors.New("no duration in the segment's info")
		}
		return off, size, scale, nil
	}
	return 0, 0, 0, errors.New("no info in the segment")
}

// element reads the ID and data size of the EBML element at pos; n is -1
// for an unknown size.
func element(r io.ReaderAt, pos int64) (id uint32, n int64, dataOff int64, err error) {
	var b [12]byte
	k, err := r.ReadAt(b[:], pos)
	if k < 2 {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, 0, err
	}
	idLen := vintLen(b[0])
	if idLen == 0 || idLen > 4 || idLen >= k {
		return 0, 0, 0, fmt.Errorf("bad element ID at %d", pos)
	}
	for _, x := range b[:idLen] {
		id = id<<8 | uint32(x)
	}
	sizeLen := vintLen(b[idLen])
	if sizeLen == 0 || idLen+sizeLen > k {
		return 0, 0, 0, fmt.Errorf("bad element size at %d", pos)
	}
	v := uint64(b[idLen]) & (0xff >> sizeLen)
	all := v == uint64(0xff>>sizeLen)
	for _, x := range b[idLen+1 : idLen+sizeLen] {
		v = v<<8 | uint64(x)
		all = all && x == 0xff
	}
	n = int64(v)
	if all {
		n = -1
	}
	return id, n, pos + int64(idLen+sizeLen), nil
}

// vintLen is the length an EBML variable-size integer's first byte says
// (0: invalid).
func vintLen(first byte) int {
	for i := range 8 {
		if first&(0x80>>i) != 0 {
			return i + 1
		}
	}
	return 0
}
