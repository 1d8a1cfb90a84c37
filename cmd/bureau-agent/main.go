// Command bureau-agent is bureau's agent inside a desktop (see package
// internal/agent/server). It runs as root from a systemd unit, serves
// bureau over the virtio-serial port org.bureau.agent.0, and needs no
// network.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/bureau/bureau/internal/agent/atspi"
	"github.com/bureau/bureau/internal/agent/server"
	"github.com/bureau/bureau/internal/agent/wire"
)

// version is set at build time (-ldflags -X main.version=…).
var version = "dev"

func main() {
	// "bureau-agent ui-helper": the agent runs itself as the session's
	// user to read the accessibility tree (internal/agent/server/ui.go).
	if len(os.Args) > 1 && os.Args[1] == atspi.HelperArg {
		os.Exit(atspi.HelperMain())
	}
	device := flag.String("device", wire.DevicePath, "the virtio-serial port to serve")
	state := flag.String("state", "/var/lib/bureau-agent", "where background processes and services are recorded")
	run := flag.String("run", "/run/bureau-secrets", "a tmpfs where services find their secrets as files")
	showVersion := flag.Bool("version", false, "print the version and the binary's SHA-256, and exit")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	exe, err := os.Executable()
	if err != nil {
		log.Error("cannot find own binary", "err", err)
		os.Exit(1)
	}
	sum, err := digest(exe)
	if err != nil {
		log.Error("cannot read own binary", "err", err)
		os.Exit(1)
	}
	if *showVersion {
		fmt.Println(version, sum)
		return
	}
	s := &server.Server{
		Info:     wire.Info{SHA256: sum, Version: version},
		Log:      log,
		StateDir: *state,
		RunDir:   *run,
		Exe:      exe,
		Restart: func() {
			err := syscall.Exec(exe, os.Args, os.Environ())
			log.Error("restart after update", "err", err)
			os.Exit(1) // systemd starts the new binary
		},
	}
	if err := s.Init(); err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("serving", "device", *device, "version", version, "sha256", sum)
	s.ServeDevice(ctx, *device)
}

func digest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
