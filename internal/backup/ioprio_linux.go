package backup

import (
	"runtime"
	"syscall"
)

// ioprioIdle is the idle I/O class (IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT):
// the thread's disk reads wait for everyone else's, under the schedulers
// that honour it (BFQ; CFQ before it).
const ioprioIdle = 3 << 13

// readIdle runs read on a thread of its own at idle I/O priority, so that a
// backup's reading gives way to the desktops' own disk I/O. The thread is
// never handed back: it ends with the goroutine, priority and all.
func readIdle(read func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// IOPRIO_WHO_PROCESS with 0: this thread. A refusal (a kernel
		// without it) only means reading at the normal priority.
		syscall.Syscall(syscall.SYS_IOPRIO_SET, 1, 0, ioprioIdle)
		errc <- read()
	}()
	return <-errc
}
