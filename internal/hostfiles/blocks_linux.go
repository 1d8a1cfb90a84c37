package hostfiles

import (
	"os"
	"syscall"
)

// blocks is the space a file takes on disk, not its apparent size.
func blocks(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
