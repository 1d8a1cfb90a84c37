package extfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

const sector = 512

// firstPartition returns the byte offset of the first partition of the raw
// disk image r (an MBR or a GPT table; sectors of 512 bytes), or 0 when the
// image holds no partition table (a file system from its first byte).
func firstPartition(r io.ReaderAt) (int64, error) {
	mbr := make([]byte, sector)
	if _, err := r.ReadAt(mbr, 0); err != nil {
		return 0, fmt.Errorf("read the partition table: %w", err)
	}
	if mbr[510] != 0x55 || mbr[511] != 0xAA {
		return 0, nil
	}
	for i := range 4 {
		e := mbr[446+16*i : 446+16*(i+1)]
		kind := e[4]
		if kind == 0 {
			continue
		}
		if kind == 0xEE {
			return firstGPTPartition(r)
		}
		start := int64(binary.LittleEndian.Uint32(e[8:12]))
		if start == 0 {
			continue
		}
		return start * sector, nil
	}
	// A boot sector without partitions (an ext file system keeps its first
	// 1024 bytes free, so this is not one): no table.
	return 0, nil
}

// firstGPTPartition reads the GPT header at LBA 1 and returns the start of
// the first entry in use.
func firstGPTPartition(r io.ReaderAt) (int64, error) {
	h := make([]byte, 92)
	if _, err := r.ReadAt(h, sector); err != nil {
		return 0, fmt.Errorf("read the GPT header: %w", err)
	}
	if !bytes.Equal(h[:8], []byte("EFI PART")) {
		return 0, errors.New("protective MBR without a GPT header")
	}
	entriesLBA := int64(binary.LittleEndian.Uint64(h[72:80]))
	count := binary.LittleEndian.Uint32(h[80:84])
	size := binary.LittleEndian.Uint32(h[84:88])
	if size < 128 || size > 4096 || count > 1024 {
		return 0, fmt.Errorf("GPT header: %d entries of %d bytes", count, size)
	}
	buf := make([]byte, int64(count)*int64(size))
	if _, err := r.ReadAt(buf, entriesLBA*sector); err != nil {
		return 0, fmt.Errorf("read the GPT entries: %w", err)
	}
	for i := range int(count) {
		e := buf[i*int(size) : (i+1)*int(size)]
		if bytes.Equal(e[:16], make([]byte, 16)) {
			continue
		}
		return int64(binary.LittleEndian.Uint64(e[32:40])) * sector, nil
	}
	return 0, errors.New("the GPT table holds no partition")
}

// checkExt checks an ext2/3/4 superblock is at offset.
func checkExt(r io.ReaderAt, offset int64) error {
	magic := make([]byte, 2)
	if _, err := r.ReadAt(magic, offset+1024+56); err != nil {
		return fmt.Errorf("read the superblock: %w", err)
	}
	if binary.LittleEndian.Uint16(magic) != 0xEF53 {
		return fmt.Errorf("no ext file system at byte %d of the disk", offset)
	}
	return nil
}

// locate finds the file system in the image at path.
func locate(ctx context.Context, path string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open disk image: %w", err)
	}
	defer f.Close()
	off, err := firstPartition(f)
	if err != nil {
		return 0, err
	}
	if err := checkExt(f, off); err != nil {
		return 0, err
	}
	return off, nil
}
