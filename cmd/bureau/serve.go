package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/bureau/bureau/internal/console"
	"github.com/bureau/bureau/internal/loop"
	"github.com/bureau/bureau/internal/readiness"
	"github.com/bureau/bureau/web"

	agentclient "github.com/bureau/bureau/internal/agent/client"
	"github.com/bureau/bureau/internal/agent/secretsync"
	"github.com/bureau/bureau/internal/api"
	"github.com/bureau/bureau/internal/auth"
	"github.com/bureau/bureau/internal/capacity"
	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/guest"
	hv "github.com/bureau/bureau/internal/hypervisor/libvirt"
	"github.com/bureau/bureau/internal/hypervisor/libvirt/link"
	"github.com/bureau/bureau/internal/manager"
	"github.com/bureau/bureau/internal/metrics"
	"github.com/bureau/bureau/internal/preview"
	"github.com/bureau/bureau/internal/recording"
	"github.com/bureau/bureau/internal/secrets"
	"github.com/bureau/bureau/internal/steps"
	"github.com/bureau/bureau/internal/storage"
	"github.com/bureau/bureau/internal/teams"
	"github.com/spf13/cobra"
)

func serveCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the API and web console",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", cfg.Listen, "address to serve on (BUREAU_LISTEN)")
	f.StringVar(&cfg.LibvirtURI, "libvirt", cfg.LibvirtURI, "libvirt URI (BUREAU_LIBVIRT_URI)")
	f.StringVar(&cfg.Accelerator, "accelerator", cfg.Accelerator, "auto, kvm or tcg (BUREAU_ACCELERATOR)")
	f.StringVar(&cfg.DefaultImage, "default-image", cfg.DefaultImage, "image for desktops that name none (BUREAU_DEFAULT_IMAGE)")
	f.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "json or text (BUREAU_LOG_FORMAT)")
	f.IntVar(&cfg.TCGCacheMiB, "tcg-cache-mib", cfg.TCGCacheMiB, "translation cache per desktop under TCG in MiB, 0 = QEMU's 1 GiB (BUREAU_TCG_CACHE_MIB)")
	f.StringVar(&cfg.NetworkSubnet, "network-subnet", cfg.NetworkSubnet, "the desktops' private IPv4 network (BUREAU_NETWORK_SUBNET)")
	f.StringVar(&cfg.NetworkOwnerRanges, "network-owner-ranges", cfg.NetworkOwnerRanges, "private IPv4 CIDRs owners may open in their desktops' network policies, comma-separated (BUREAU_NETWORK_OWNER_RANGES)")
	f.StringVar(&cfg.PreviewDomain, "preview-domain", cfg.PreviewDomain, "live URLs are <port>-<desktop>.DOMAIN; \"\" for /preview/ paths only (BUREAU_PREVIEW_DOMAIN)")
	f.StringVar(&cfg.DefaultPlan, "default-plan", cfg.DefaultPlan, "quota plan of owners without their own: free, team or unlimited (BUREAU_DEFAULT_PLAN)")
	return cmd
}

func serve(ctx context.Context, cfg *config.Config) error {
	log := newLogger(cfg.LogFormat)
	if _, ok := desktop.Plans[cfg.DefaultPlan]; !ok {
		return fmt.Errorf("default plan %q: want one of %v", cfg.DefaultPlan, desktop.PlanNames())
	}
	if cfg.TCGCacheMiB < 0 {
		return fmt.Errorf("tcg cache %d MiB: want 0 (QEMU's default) or more", cfg.TCGCacheMiB)
	}
	if modes := []string{"auto", "on", "off"}; !slices.Contains(modes, cfg.Placement) {
		return fmt.Errorf("BUREAU_PLACEMENT %q: want one of %v", cfg.Placement, modes)
	}
	if !slices.Contains(api.StepThumbnailModes, cfg.StepThumbnails) {
		return fmt.Errorf("BUREAU_STEP_THUMBNAILS %q: want one of %v", cfg.StepThumbnails, api.StepThumbnailModes)
	}
	ownerOpenable, err := desktop.ParseRanges(cfg.NetworkOwnerRanges)
	if err != nil {
		return fmt.Errorf("BUREAU_NETWORK_OWNER_RANGES: %w", err)
	}
	reach, err := checkWeb(cfg)
	if err != nil {
		return err
	}
	accel, why, err := hv.ChooseAccelerator(cfg.Accelerator)
	if err != nil {
		return err
	}
	log.Info("accelerator chosen", "accelerator", accel, "reason", why)

	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	tokens := auth.New(st)
	if secret, err := tokens.Bootstrap(ctx, cfg.AdminToken); err != nil {
		return fmt.Errorf("admin token: %w", err)
	} else if secret != "" {
		if err := os.WriteFile(cfg.AdminTokenFile(), []byte(secret+"\n"), 0o600); err != nil {
			return fmt.Errorf("save admin token: %w", err)
		}
		fmt.Fprintf(os.Stderr, "\nbureau: first admin token (shown once, also saved to %s):\n\n    %s\n\n", cfg.AdminTokenFile(), secret)
	}

	h, err := hv.Open(ctx, cfg.LibvirtURI, log)
	if err != nil {
		return err
	}
	defer h.Close()
	h.AgentViaStream = cfg.AgentViaStream
	agentBin, err := os.ReadFile(cfg.Agent())
	if err != nil {
		log.Warn("no bureau-agent to install in desktops: they are reached through QEMU's guest agent only (build it with make build)", "path", cfg.Agent(), "err", err)
		agentBin = nil
	}
	agents, err := agentclient.New(h, cfg.Agent(), log)
	if agentBin == nil || err != nil {
		agents, _ = agentclient.New(h, "", log)
	}
	iso, err := setUpIsolation(ctx, cfg, h, log)
	if err != nil {
		return err
	}
	if err := desktop.ValidateIdleTiers(cfg.NapAfterSeconds, cfg.SleepAfterSeconds, desktop.DefaultIdleTimeout); err != nil {
		return fmt.Errorf("BUREAU_NAP_AFTER_SECONDS / BUREAU_SLEEP_AFTER_SECONDS: %w", err)
	}
	hostList, err := watchHosts(ctx, cfg, st, accel, log)
	if err != nil {
		return err
	}
	// Desktops on remote hosts: every call about one goes to its host.
	where := &placements{st: st}
	h.SetRemotes(link.Remotes{Where: where.where, Hosts: remoteHosts(st)})
	hostList.OnRemove = h.ForgetRemote
	met := metrics.New(st, h, log)
	room := capacity.Capacity{DataDir: cfg.DataDir}
	ksm := capacity.NewKSMHold(cfg.DataDir, log)
	ksm.Recover()
	key, err := secrets.LoadOrCreateKey(filepath.Join(cfg.DataDir, "secrets.key"))
	if err != nil {
		return err
	}
	// Backups are encrypted with a key of their own: losing it loses them;
	// a fresh install given this file reads them (the disaster drill).
	backupKey, err := secrets.LoadOrCreateKey(filepath.Join(cfg.DataDir, "backup.key"))
	if err != nil {
		return fmt.Errorf("backup key: %w", err)
	}
	m := manager.New(manager.Config{DataDir: cfg.DataDir, DefaultImage: cfg.DefaultImage, Accelerator: accel,
		Backups:     manager.BackupsConfig{Targets: st.Backups(), Records: st.Backups(), Schedules: st.Backups(), Key: backupKey, SealKey: key, Ended: met.BackupEnded},
		TCGCacheMiB: cfg.TCGCacheMiB, Observe: met.ObserveOperation, DefaultPlan: cfg.DefaultPlan, Capacity: room,
		Reserve:        capacity.Reserve{Path: filepath.Join(cfg.DataDir, "reserve"), Size: 64 << 20},
		Failpoints:     manager.ParseFailpoints(os.Getenv("BUREAU_FAILPOINTS")),
		ReconcileEvery: time.Duration(max(cfg.ReconcileSeconds, 1)) * time.Second,
		NapAfter:       cfg.NapAfterSeconds, SleepAfter: cfg.SleepAfterSeconds,
		IdleCheck:  time.Duration(max(cfg.IdleCheckSeconds, 1)) * time.Second,
		HostMemory: room, MemoryLowMiB: cfg.MemoryLowMiB, SaveAsIs: cfg.SaveAsIs, WarmSpares: cfg.WarmSpares, CPUHold: ksm,
		Network: iso.network, VMGroup: iso.vmGroup, Firewall: iso.firewall, Addresses: iso.addresses, Subnet: iso.subnet,
		Sites: sites{st: st, h: h, prep: hostList.prep}, Placement: placementOf(cfg, st, room),
		Mover: mover{h}, ColdMover: mover{h}, Drains: st, HostAddress: cfg.HostAddress, Moved: where.moved},
		h, storage.Disks{}, seedWriter{agent: agentBin}, st, log)
	met.SetViewers(m)
	h.ScreenDir = m.ScreenDir
	if err := m.Run(); err != nil {
		return err
	}
	defer m.Close()
	go resumeDrains(ctx, st, m, log)

	sec, err := secrets.New(st, key)
	if err != nil {
		return err
	}
	urls := preview.New(st, key)
	urls.OnForget = met.ForgetDesktop
	gs := guest.New(h).WithChannel(agents)
	// A desktop's agent holds its services' secrets in memory only: hand
	// them over at every new session and whenever a desktop starts.
	sync := &secretsync.SecretSync{Agents: gs, Desktops: m, Secrets: sec, Log: log}
	ready := followReadiness(ctx, m, gs, log)
	agents.OnSession(func(domain string) {
		ready.Recheck(domain)
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := sync.Sync(sctx, domain); err != nil {
			log.Info("secrets not handed to the desktop's agent yet", "domain", domain, "err", err)
		}
	})

	consoles := console.New(st, log)
	stepLog := steps.New(st, filepath.Join(cfg.DataDir, "steps"), cfg.StepsKeep, log)
	stepLog.Recorded = met.StepRecorded
	screens, screenKeeper, closeScreens := liveScreens(*cfg, m, h, met, log)
	defer closeScreens()
	recorder := recording.New(recording.Config{Dir: filepath.Join(cfg.DataDir, "recordings"),
		MaxSeconds: cfg.RecordingMaxSeconds, KeepBytes: int64(cfg.RecordingsKeepMiB) << 20}, st, screens, m, log)
	if err := recorder.Recover(ctx); err != nil {
		return err
	}
	if !recorder.Available() {
		log.Warn("no ffmpeg on this host: recordings cannot be made (apt-get install ffmpeg)")
	}
	met.CountRecordings(recorder.Recording)
	defer recorder.Close(context.WithoutCancel(ctx))
	people, err := newPeople(ctx, cfg.DataDir, st, m, stepLog, recorder, log)
	if err != nil {
		return err
	}
	hooks, err := startWebhooks(ctx, cfg, st, key, m, log)
	if err != nil {
		return err
	}
	auditLog, stopAudit, err := startAudit(ctx, cfg, st, log)
	if err != nil {
		return err
	}
	signIn, err := startSignIn(ctx, cfg, key, tokens, log)
	if err != nil {
		return err
	}
	defer stopAudit()
	go followDesktops(ctx, m, consoles, agents, sync, desktopFollowers{steps: stepLog, recordings: recorder, screens: screenKeeper, ready: ready, people: people})
	if list, err := m.List(ctx, desktop.Filter{}); err == nil {
		for _, d := range list {
			if d.State == desktop.StateRunning {
				go sync.Booted(ctx, d.DomainName()) // a desktop may have booted while bureau was down
			}
		}
	}

	names := newLiveNames(cfg.PreviewDomain, m)
	certs, err := newCerts(cfg, reach, names, log)
	if err != nil {
		return err
	}
	var tlsState api.TLSState
	if certs != nil {
		tlsState = certs
		met.CountCertificates(certs.Status)
	}
	router := api.New(api.Deps{
		PublicURL: reach.public, TrustedProxies: reach.trusted, TLS: tlsState, CertificateNames: certificateNames(names),
		Consoles: consoles, Web: web.Static, Hosts: hostList, HostLoads: st, Migrations: m.Moves(), Drains: m.Moves(),
		Backups: m.Backups(), BackupSchedules: m.Backups(), BackupFiles: m.Backups().Files(), Webhooks: hooks, Audit: auditLog, SignIn: signIn, Teams: teams.New(st.Teams()),
		Desktops: m, Snapshots: m.Snapshots(), Templates: m.WarmPool(), Readiness: ready, Computer: newComputer(h, screens), Guest: gs, Clipboard: gs, Windows: gs, UI: gs, Processes: gs, Ports: gs, Terminals: gs, Services: gs, Secrets: sec, SecretValues: sec,
		SecretsChanged: func(owner, desktopID string) { sync.Changed(context.WithoutCancel(ctx), owner, desktopID) },
		Previews:       urls, URLs: urls, PreviewDomain: cfg.PreviewDomain, OwnerOpenable: ownerOpenable, Tokens: tokens, Images: imageService(cfg, st, log), People: people, Steps: stepLog, StepThumbnails: cfg.StepThumbnails, Recordings: recorder, KeptRecordings: recorder, Log: log,
		Live: m, Stats: h, Metrics: met.Handler(), Observe: met.ObserveRequest, ConsoleBytes: met.ConsoleBytes, ObserveLiveURL: met.ObserveLiveURL,
		Info: map[string]string{"version": version, "accelerator": string(accel), "accelerator_reason": why,
			"database": st.Dialect(), "default_image": cfg.DefaultImage, "go": runtime.Version()},
		HostDirs: []string{cfg.DataDir, capacity.DefaultSaveDir},
	})
	return listen(ctx, cfg, router, certs, log)
}

// followDesktops ends console sessions and revokes console tokens as
// desktops stop, hibernate or go away (ends their recordings, and drops
// the step logs and the recordings not kept of deleted ones), drops bureau-agent sessions of
// desktops that leave the running state, hands the secrets of their
// services to desktops that start, and prunes dead tokens hourly.
// desktopFollowers keep what bureau holds per desktop beside the
// desktop itself: its step log, its recordings and its live framebuffer.
type desktopFollowers struct {
	steps      *steps.Log
	recordings *recording.Service
	screens    screenForgetter
	ready      *readiness.Tracker
	people     *loop.Service
}

func followDesktops(ctx context.Context, m *manager.Manager, consoles *console.Service, agents *agentclient.Client, sync *secretsync.SecretSync, f desktopFollowers) {
	sub := m.Subscribe(ctx, "")
	was := map[string]desktop.State{} // each desktop's last state seen
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ch := <-sub.C:
			if ch.Desktop != nil {
				consoles.DesktopChanged(ctx, ch.Desktop)
				f.ready.Follow(ch.Desktop)
				f.recordings.DesktopChanged(ctx, ch.Desktop)
				// Whatever is not plainly running (stopping, rebooting,
				// reverting, hibernating…) ends the agent's session: the
				// next call dials the guest as it then is.
				if ch.Desktop.State != desktop.StateRunning {
					agents.Forget(ch.Desktop.DomainName())
					// A paused QEMU keeps scanning for a viewer, and its
					// VNC buffers come and go under the sleep tier's
					// page-out: the framebuffer is made again on use.
					f.screens.Forget(ch.Desktop.DomainName())
				} else if was[ch.Desktop.ID] != desktop.StateRunning {
					go sync.Booted(ctx, ch.Desktop.DomainName())
				}
				was[ch.Desktop.ID] = ch.Desktop.State
				if ch.Desktop.DeletedAt != nil {
					delete(was, ch.Desktop.ID)
					if err := f.steps.Forget(ctx, ch.Desktop.ID); err != nil {
						slog.Warn("dropping a deleted desktop's step log", "desktop", ch.Desktop.ID, "err", err)
					}
					f.people.Forget(ctx, ch.Desktop.ID)
					if err := f.recordings.Forget(ctx, ch.Desktop.ID); err != nil {
						slog.Warn("removing a deleted desktop's recordings", "desktop", ch.Desktop.ID, "err", err)
					}
				}
			}
		case <-prune.C:
			consoles.Prune(ctx)
		}
	}
}
