package prepare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// errScanned ends a handshake once the host showed its key.
var errScanned = errors.New("host key read")

// scan asks the SSH server at addr which host key it offers (ed25519
// first), as ssh-keyscan does: the handshake stops at the key.
func scan(ctx context.Context, addr string) (ssh.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var key ssh.PublicKey
	_, _, _, err = ssh.NewClientConn(conn, addr, &ssh.ClientConfig{
		User: "bureau",
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			key = k
			return errScanned
		},
		HostKeyAlgorithms: []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256},
		ClientVersion:     "SSH-2.0-bureau",
	})
	if key != nil {
		return key, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("no answer: %w", ctx.Err())
	}
	return nil, err
}
