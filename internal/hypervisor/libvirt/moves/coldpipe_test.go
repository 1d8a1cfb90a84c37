package moves

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirt"
)

// The pipe between two real hosts is checked in e2e/host2_coldmove_test.go;
// here, both streams are played as libvirt 9.0 runs them.

// hostFile plays the receiving host's file for a sparse upload, as
// libvirt's fdstream writes it: data at the position, a hole skipped and
// the file truncated at its end. It starts at the volume's capacity.
type hostFile struct {
	b        []byte
	pos, end int
}

func (f *hostFile) write(p []byte) {
	copy(f.b[f.pos:], p)
	f.pos += len(p)
	f.end = max(f.end, f.pos)
}

func (f *hostFile) hole(n int64) {
	f.pos += int(n)
	clear(f.b[f.pos:]) // truncated, then read back as zeros if extended
	f.end = f.pos
}

// sparseSendAll plays virStreamSparseSendAll into f.
func sparseSendAll(f *hostFile, data libvirt.StreamSourceFunc, hole libvirt.StreamSourceHoleFunc, skip libvirt.StreamSourceSkipFunc) error {
	const bufLen = 256 << 10
	var dataLen int64
	for {
		if dataLen == 0 {
			inData, n, err := hole(nil)
			if err != nil {
				return err
			}
			if !inData && n > 0 {
				f.hole(n)
				if err := skip(nil, n); err != nil {
					return err
				}
				continue
			}
			dataLen = n
		}
		b, err := data(nil, int(min(bufLen, dataLen)))
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return nil
		}
		f.write(b)
		dataLen -= int64(len(b))
	}
}

// section is what a download stream brings: data, or a hole.
type section struct {
	data []byte
	hole int64
}

// pipeRun sends sections through a pipe for a file of size bytes: the
// download side on its own goroutine, ended with downErr; it returns the
// host's file and the upload's error.
func pipeRun(ctx context.Context, t *testing.T, size int, sections []section, downErr error) ([]byte, *chunkPipe, error) {
	t.Helper()
	var moves []int64
	p := newChunkPipe(ctx, int64(size), func(pos int64) { moves = append(moves, pos) })
	go func() {
		var err error
		for _, s := range sections {
			if s.hole > 0 {
				err = p.putHole(nil, s.hole)
			} else {
				_, err = p.put(nil, append([]byte(nil), s.data...))
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = downErr
		}
		p.close(err)
	}()
	f := &hostFile{b: make([]byte, size), end: size}
	err := sparseSendAll(f, p.take, p.next, p.skip)
	p.abandon()
	for i := 1; i < len(moves); i++ {
		if moves[i] < moves[i-1] {
			t.Errorf("progress went back: %v", moves)
		}
	}
	if err == nil && (len(moves) == 0 || moves[len(moves)-1] != int64(size)) {
		t.Errorf("progress did not end at %d: %v", size, moves)
	}
	return f.b[:f.end], p, err
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(int64(n))).Read(b)
	return b
}

func TestChunkPipeCarriesDataAndHoles(t *testing.T) {
	a, b, c := randomBytes(100<<10), randomBytes(300<<10), randomBytes(700<<10)
	want := make([]byte, 8<<20)
	copy(want, a)
	copy(want[1<<20+len(a):], b)
	copy(want[1<<20+len(a)+len(b):], c)
	body := []section{{data: a}, {hole: 1 << 20}, {data: b}, {data: c}}
	tail := int64(len(want) - (1<<20 + len(a) + len(b) + len(c)))

	// The download sends the hole at the end, or does not: either way the
	// file ends at its size (the upload's holes truncate it).
	for name, sections := range map[string][]section{
		"trailing hole sent":     append(append([]section(nil), body...), section{hole: tail}),
		"trailing hole not sent": body,
	} {
		got, _, err := pipeRun(context.Background(), t, len(want), sections, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes arrived, not the file's %d (or they differ)", name, len(got), len(want))
		}
	}
	// Holes only.
	if got, _, err := pipeRun(context.Background(), t, 1<<20, nil, nil); err != nil || len(got) != 1<<20 || !bytes.Equal(got, make([]byte, 1<<20)) {
		t.Errorf("a file of one hole: %d bytes, %v", len(got), err)
	}
}

func TestChunkPipeFailures(t *testing.T) {
	// The download fails: the upload fails with its error.
	broken := errors.New("host one: download: connection reset")
	_, p, err := pipeRun(context.Background(), t, 4<<20, []section{{data: randomBytes(1 << 20)}}, broken)
	if !errors.Is(err, broken) || !errors.Is(p.failed(), broken) {
		t.Errorf("download failed: upload %v, failed() %v", err, p.failed())
	}
	// More than the file's size.
	_, _, err = pipeRun(context.Background(), t, 1<<10, []section{{data: randomBytes(2 << 10)}}, nil)
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("too much data: %v", err)
	}

	// The upload is gone: the download's next chunk fails once the pipe
	// is full.
	p = newChunkPipe(context.Background(), 1<<30, func(int64) {})
	p.abandon()
	var perr error
	for i := 0; i <= pipeDepth && perr == nil; i++ {
		_, perr = p.put(nil, make([]byte, 1))
	}
	if !errors.Is(perr, errPipeStopped) || !errors.Is(p.written(), errPipeStopped) {
		t.Errorf("upload gone: %v", perr)
	}

	// Cancelled: a download blocked on a full pipe and an upload waiting
	// for a chunk both return the cause.
	stop := errors.New("cancelled by the test")
	ctx, cancel := context.WithCancelCause(context.Background())
	p = newChunkPipe(ctx, 1<<30, func(int64) {})
	for range pipeDepth {
		p.put(nil, make([]byte, 1))
	}
	blocked := make(chan error, 1)
	go func() { _, err := p.put(nil, make([]byte, 1)); blocked <- err }()
	waiting := newChunkPipe(ctx, 1<<30, func(int64) {})
	idle := make(chan error, 1)
	go func() { _, _, err := waiting.next(nil); idle <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel(stop)
	for what, ch := range map[string]chan error{"download": blocked, "upload": idle} {
		select {
		case err := <-ch:
			if !errors.Is(err, stop) {
				t.Errorf("%s: %v, want the cause", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s still blocked after the cancel", what)
		}
	}
	if _, err := p.take(nil, 1); !errors.Is(err, stop) {
		t.Errorf("take after the cancel: %v", err)
	}
}
