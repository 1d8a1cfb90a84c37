package manager

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerIs checks that the process serving a unix socket connection runs as
// uid (0: any, for a desktop made before each had its own QEMU user).
func peerIs(conn net.Conn, uid int) error {
	if uid == 0 {
		return nil
	}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("the serving process: %w", cerr)
	}
	if int(cred.Uid) != uid {
		return fmt.Errorf("served by uid %d, not the desktop's QEMU user %d", cred.Uid, uid)
	}
	return nil
}
