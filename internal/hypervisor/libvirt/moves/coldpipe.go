package moves

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"libvirt.org/go/libvirt"
)

// chunk is a section of a file on its way from one host to another:
// data, or a hole of hole bytes.
type chunk struct {
	data []byte
	hole int64
}

// pipeDepth bounds the chunks between the two streams: libvirt's stream
// messages carry at most 256 KiB, so at most 8 MiB are in flight.
const pipeDepth = 32

// errPipeStopped ends a download whose upload is gone.
var errPipeStopped = errors.New("the upload stopped")

// chunkPipe carries a sparse download from one host into a sparse upload
// to another (a remote → remote CopyFile), staging nothing but the chunks
// in flight. The download's callbacks (put, putHole, then close) run on
// one goroutine, the upload's (next, skip, take) on another.
type chunkPipe struct {
	ctx      context.Context
	ch       chan chunk
	stop     chan struct{} // closed when the upload gives up
	stopOnce sync.Once
	size     int64 // the file's: the upload sends exactly that much

	in   int64 // download side: bytes put so far
	werr error // why the download side stopped (a callback's cause)
	err  error // why the download failed; set before ch is closed

	cur   chunk // upload side: what is left of the chunk being sent
	out   int64
	moved func(pos int64)
	rerr  error // why an upload callback stopped the upload
}

func newChunkPipe(ctx context.Context, size int64, moved func(int64)) *chunkPipe {
	return &chunkPipe{ctx: ctx, ch: make(chan chunk, pipeDepth), stop: make(chan struct{}), size: size, moved: moved}
}

// put is the download's data callback. The stream hands it a new slice
// each time, which is passed on as it is.
func (p *chunkPipe) put(_ *libvirt.Stream, b []byte) (int, error) {
	if p.in+int64(len(b)) > p.size {
		return 0, p.wfail(fmt.Errorf("the download brought more than the file's %d bytes", p.size))
	}
	if len(b) == 0 {
		return 0, nil
	}
	if err := p.send(chunk{data: b}); err != nil {
		return 0, err
	}
	p.in += int64(len(b))
	return len(b), nil
}

// putHole is the download's hole callback.
func (p *chunkPipe) putHole(_ *libvirt.Stream, n int64) error {
	if n < 0 || p.in+n > p.size {
		return p.wfail(fmt.Errorf("the download brought a hole of %d bytes at %d, past the file's %d bytes", n, p.in, p.size))
	}
	if n == 0 {
		return nil
	}
	if err := p.send(chunk{hole: n}); err != nil {
		return err
	}
	p.in += n
	return nil
}

func (p *chunkPipe) send(c chunk) error {
	select {
	case p.ch <- c:
		return nil
	case <-p.stop:
		return p.wfail(errPipeStopped)
	case <-p.ctx.Done():
		return p.wfail(context.Cause(p.ctx))
	}
}

func (p *chunkPipe) wfail(err error) error {
	p.werr = err
	return err
}

// written is why a download callback stopped the download (nil if none).
func (p *chunkPipe) written() error { return p.werr }

// close ends the download side: err is why it failed (nil: it ended).
// A download that ended short of the file's size is padded with a hole
// to it (the end of a file can be a hole the stream need not send), so
// that the upload, which truncates the file at each hole it writes, ends
// at exactly that size.
func (p *chunkPipe) close(err error) {
	if err == nil && p.in < p.size {
		err = p.putHole(nil, p.size-p.in)
	}
	p.err = err
	close(p.ch)
}

// abandon tells the download side the upload is gone.
func (p *chunkPipe) abandon() { p.stopOnce.Do(func() { close(p.stop) }) }

// next is the upload's hole callback: whether the next section is data,
// and its length (data of length 0: the end).
func (p *chunkPipe) next(*libvirt.Stream) (bool, int64, error) {
	if p.cur.hole == 0 && len(p.cur.data) == 0 {
		select {
		case c, ok := <-p.ch:
			if !ok {
				if p.err != nil {
					return false, 0, p.rfail(p.err)
				}
				return true, 0, nil
			}
			p.cur = c
		case <-p.ctx.Done():
			return false, 0, p.rfail(context.Cause(p.ctx))
		}
	}
	if p.cur.hole > 0 {
		return false, p.cur.hole, nil
	}
	return true, int64(len(p.cur.data)), nil
}

// skip passes the hole next announced.
func (p *chunkPipe) skip(_ *libvirt.Stream, n int64) error {
	if n <= 0 || n > p.cur.hole {
		return p.rfail(fmt.Errorf("skip %d bytes of a %d-byte hole", n, p.cur.hole))
	}
	p.cur.hole -= n
	p.out += n
	p.moved(p.out)
	return nil
}

// take is the upload's data callback: up to n bytes of the chunk next
// announced (none when n is 0, at the end).
func (p *chunkPipe) take(_ *libvirt.Stream, n int) ([]byte, error) {
	if err := p.ctx.Err(); err != nil {
		return nil, p.rfail(context.Cause(p.ctx))
	}
	if n <= 0 {
		return nil, nil
	}
	if len(p.cur.data) == 0 {
		// Returning nothing would end the upload as if the file had.
		return nil, p.rfail(errors.New("data asked for where the file has none"))
	}
	k := min(n, len(p.cur.data))
	b := p.cur.data[:k]
	p.cur.data = p.cur.data[k:]
	p.out += int64(k)
	p.moved(p.out)
	return b, nil
}

func (p *chunkPipe) rfail(err error) error {
	p.rerr = err
	return err
}

// failed is why an upload callback stopped the upload (nil if none did):
// the download's error, or the context's.
func (p *chunkPipe) failed() error { return p.rerr }
