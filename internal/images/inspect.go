package images

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bureau/bureau/internal/desktop"
)

// MaxImageFileSize bounds the file an import downloads or copies, so a
// hostile or mistaken source cannot fill the data directory.
const MaxImageFileSize = 128 << 30 // 128 GiB

// headSize is how much of a file's start inspection reads: the whole first
// cluster of a qcow2 image at the largest cluster size.
const headSize = 1 << qcow2MaxClusterBits

// otherFormats are the magic numbers of disk image formats QEMU would
// recognise. Bureau only ever reads an image as qcow2 or raw; a file in
// another format (some of which name further host files, like a VMDK
// descriptor) is refused rather than imported as raw bytes.
var otherFormats = []struct {
	name  string
	off   int
	magic string
}{
	{"qed", 0, "QED\x00"},
	{"vmdk", 0, "KDMV"},
	{"vmdk", 0, "COWD"},
	{"vmdk", 0, "# Disk DescriptorFile"},
	{"vhdx", 0, "vhdxfile"},
	{"vpc", 0, "conectix"},
	{"vdi", 0x40, "\x7f\x10\xda\xbe"},
	{"luks", 0, "LUKS\xba\xbe"},
	{"bochs", 0, "Bochs Virtual HD Image"},
	{"cloop", 0, "#!/bin/sh\n#V2.0 Format\n"},
	{"parallels", 0, "WithoutFreeSpace"},
	{"parallels", 0, "WithouFreSpacExt"},
}

// otherFooters are formats recognised by their last 512 bytes.
var otherFooters = []struct{ name, magic string }{
	{"vpc", "conectix"},
	{"dmg", "koly"},
}

// refuse is an image bureau will not import: a 422 naming the problem.
func refuse(err error) error {
	return &desktop.ValidationError{Field: "image", Message: err.Error()}
}

// classifyImage decides from a file's first bytes (head), its last 512
// bytes (tail, nil when unknown) and its size whether it is a qcow2 image
// bureau accepts or raw, and returns the format and the virtual size.
func classifyImage(head, tail []byte, size int64) (string, int64, error) {
	if size > MaxImageFileSize {
		return "", 0, refuse(fmt.Errorf("file is %d bytes, over the %d GiB maximum", size, MaxImageFileSize>>30))
	}
	if strings.HasPrefix(string(head), qcow2Magic) {
		h, err := parseQcow2Header(head, size)
		if err != nil {
			return "", 0, refuse(err)
		}
		return "qcow2", int64(h.VirtualSize), nil
	}
	for _, f := range otherFormats {
		if len(head) >= f.off+len(f.magic) && string(head[f.off:f.off+len(f.magic)]) == f.magic {
			return "", 0, refuse(fmt.Errorf("unsupported image format %s: want qcow2 or raw", f.name))
		}
	}
	for _, f := range otherFooters {
		if len(tail) == 512 && strings.HasPrefix(string(tail), f.magic) {
			return "", 0, refuse(fmt.Errorf("unsupported image format %s: want qcow2 or raw", f.name))
		}
	}
	// Anything else is raw: read with -f raw, its bytes are only ever
	// guest data, whatever they contain.
	return "raw", size, nil
}

// inspectImage is classifyImage on an open file, which must be a regular
// file.
func inspectImage(f *os.File) (string, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !st.Mode().IsRegular() {
		return "", 0, refuse(fmt.Errorf("%s is not a regular file", f.Name()))
	}
	size := st.Size()
	head := make([]byte, min(size, headSize))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return "", 0, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	var tail []byte
	if size >= 512 {
		tail = make([]byte, 512)
		if _, err := f.ReadAt(tail, size-512); err != nil && err != io.EOF {
			return "", 0, fmt.Errorf("read %s: %w", f.Name(), err)
		}
	}
	return classifyImage(head, tail, size)
}

// inspectPath is inspectImage on a file bureau owns (a download or copy).
func inspectPath(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	return inspectImage(f)
}
