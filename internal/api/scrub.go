package api

import (
	"encoding/base64"
	"io"
	"sort"
	"strings"
)

// minScrubbed is the shortest secret value scrubbed from output (shorter
// ones would blank out ordinary text).
const minScrubbed = 3

// scrubber replaces secret values in a stream with "[secret NAME]". It
// holds back a tail that could be the start of a value until the next
// write or Flush, so a value split across writes is still caught.
type scrubber struct {
	w       io.Writer
	secrets []secretValue
	buf     []byte
}

type secretValue struct{ name, value string }

func secretList(values map[string]string) []secretValue {
	var out []secretValue
	for n, v := range values {
		if len(v) >= minScrubbed {
			out = append(out, secretValue{n, v})
		}
	}
	// Longest first: a value inside another is not matched first.
	sort.Slice(out, func(i, j int) bool { return len(out[i].value) > len(out[j].value) })
	return out
}

// newScrubber returns w itself when there is nothing to scrub.
func newScrubber(w io.Writer, values map[string]string) io.Writer {
	list := secretList(values)
	if len(list) == 0 {
		return w
	}
	return &scrubber{w: w, secrets: list}
}

func (s *scrubber) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	out := s.scan(false)
	if len(out) > 0 {
		if _, err := s.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what was held back.
func (s *scrubber) Flush() error {
	out := s.scan(true)
	if len(out) == 0 {
		return nil
	}
	_, err := s.w.Write(out)
	return err
}

func (s *scrubber) scan(final bool) []byte {
	var out []byte
	for {
		at, which := -1, -1
		for i, sv := range s.secrets {
			if j := strings.Index(string(s.buf), sv.value); j >= 0 && (at < 0 || j < at) {
				at, which = j, i
			}
		}
		if at < 0 {
			break
		}
		out = append(out, s.buf[:at]...)
		out = append(out, "[secret "+s.secrets[which].name+"]"...)
		s.buf = s.buf[at+len(s.secrets[which].value):]
	}
	keep := 0
	if !final {
		keep = s.partial()
	}
	out = append(out, s.buf[:len(s.buf)-keep]...)
	s.buf = append([]byte(nil), s.buf[len(s.buf)-keep:]...)
	return out
}

// partial is the length of the longest tail of buf that begins a value.
func (s *scrubber) partial() int {
	best := 0
	for _, sv := range s.secrets {
		for k := min(len(sv.value)-1, len(s.buf)); k > best; k-- {
			if strings.HasPrefix(sv.value, string(s.buf[len(s.buf)-k:])) {
				best = k
				break
			}
		}
	}
	return best
}

// scrubString scrubs a whole text.
func scrubString(text string, values map[string]string) string {
	var b strings.Builder
	w := newScrubber(&b, values)
	if _, ok := w.(*scrubber); !ok {
		return text
	}
	io.WriteString(w, text)
	w.(*scrubber).Flush()
	return b.String()
}

// scrubOutput scrubs an exec result's text, base64 included.
func scrubOutput(text, encoding string, values map[string]string) string {
	if encoding != "base64" {
		return scrubString(text, values)
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return text
	}
	return base64.StdEncoding.EncodeToString([]byte(scrubString(string(raw), values)))
}

// scrubbedOutput scrubs a streamed command's output, each stream apart.
type scrubbedOutput struct {
	sse     *sseWriter
	streams map[string]io.Writer
	values  map[string]string
}

func newScrubbedOutput(sse *sseWriter, values map[string]string) *scrubbedOutput {
	return &scrubbedOutput{sse: sse, streams: map[string]io.Writer{}, values: values}
}

func (o *scrubbedOutput) Started() error { return o.sse.Started() }

func (o *scrubbedOutput) Output(stream string, b []byte) error {
	if len(o.values) == 0 {
		return o.sse.Output(stream, b)
	}
	w := o.streams[stream]
	if w == nil {
		w = newScrubber(streamTo{o.sse, stream}, o.values)
		o.streams[stream] = w
	}
	_, err := w.Write(b)
	return err
}

// flush sends what the scrubbers held back.
func (o *scrubbedOutput) flush() {
	for _, w := range o.streams {
		if f, ok := w.(*scrubber); ok {
			f.Flush()
		}
	}
}

type streamTo struct {
	sse    *sseWriter
	stream string
}

func (t streamTo) Write(p []byte) (int, error) {
	if err := t.sse.Output(t.stream, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
