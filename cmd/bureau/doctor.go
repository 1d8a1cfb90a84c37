package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// defaultEnvFile is where an installed bureau keeps its settings
// (packaging/bureau.env): doctor reads it so that it checks what the
// service runs with, not the shell's defaults.
const defaultEnvFile = "/etc/bureau/bureau.env"

func doctorCmd(cfg *config.Config) *cobra.Command {
	var asJSON bool
	var envFile string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this host for what bureau serve needs, and say what to fix",
		Long: `Check this host for what bureau serve needs, one line per check:
ok, warn or FAIL, what was found and, when not ok, the fix.

Settings come from the environment, then from --env-file (the installed
service's /etc/bureau/bureau.env, when it exists) for what the environment
does not set. Nothing on the host is changed. Exit status 1 when a check
FAILs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := doctorConfig(cmd, *cfg, envFile)
			if err != nil {
				return err
			}
			return runDoctor(cmd.Context(), doctorChecks(c), cmd.OutOrStdout(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print the checks as JSON: [{"check","status","detail","fix"}]`)
	cmd.Flags().StringVar(&envFile, "env-file", defaultEnvFile, `settings file read for what the environment does not set ("" for none)`)
	return cmd
}

// status is a check's verdict.
type status string

const (
	statusOK   status = "ok"
	statusWarn status = "warn"
	statusFail status = "FAIL"
)

// finding is one line of doctor's report. Fix says what to do (a
// command or a setting) when Status is not ok.
type finding struct {
	Check  string `json:"check"`
	Status status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

func ok(detail string) finding        { return finding{Status: statusOK, Detail: detail} }
func warn(detail, fix string) finding { return finding{Status: statusWarn, Detail: detail, Fix: fix} }
func fail(detail, fix string) finding { return finding{Status: statusFail, Detail: detail, Fix: fix} }

// check is one of doctor's checks. run must not change the host; it is
// given up on after timeout (default checkTimeout), whatever it waits on
// (a wedged libvirtd, a hung network file system), and then FAILs with
// hung as its fix.
type check struct {
	name    string
	timeout time.Duration
	hung    string
	run     func(ctx context.Context) finding
}

const checkTimeout = 10 * time.Second

// runDoctor runs the checks side by side, prints them in order, and
// returns exitCode(1) when one FAILs (main exits with it silently).
func runDoctor(ctx context.Context, checks []check, w io.Writer, asJSON bool) error {
	found := runChecks(ctx, checks)
	if err := printFindings(w, found, asJSON); err != nil {
		return err
	}
	for _, f := range found {
		if f.Status == statusFail {
			return exitCode(1)
		}
	}
	return nil
}

func runChecks(ctx context.Context, checks []check) []finding {
	found := make([]finding, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() { found[i] = runCheck(ctx, c) })
	}
	wg.Wait()
	return found
}

// runCheck runs c within its timeout. A check still running then is left
// behind: the process ends soon after.
func runCheck(ctx context.Context, c check) finding {
	limit := c.timeout
	if limit <= 0 {
		limit = checkTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := make(chan finding, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fail(fmt.Sprintf("the check itself failed: %v", p), "report this as a bureau bug")
			}
		}()
		done <- c.run(ctx)
	}()
	var f finding
	select {
	case f = <-done:
	case <-ctx.Done():
		f = fail(fmt.Sprintf("no answer within %s", limit), c.hung)
	}
	f.Check = c.name
	return f
}

// printFindings writes one line per check ("ok    accelerator  kvm …",
// the fix after the detail), or the list as JSON.
func printFindings(w io.Writer, found []finding, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if found == nil {
			found = []finding{}
		}
		return enc.Encode(found)
	}
	width := 0
	for _, f := range found {
		width = max(width, len(f.Check))
	}
	bw := bufio.NewWriter(w)
	for _, f := range found {
		line := fmt.Sprintf("%-4s  %-*s  %s", f.Status, width, f.Check, f.Detail)
		if f.Status != statusOK && f.Fix != "" {
			line += " — fix: " + f.Fix
		}
		fmt.Fprintln(bw, line)
	}
	return bw.Flush()
}

// doctorConfig is base (the environment and the command line) completed
// from envFile: each variable of the file that the environment does not
// set is set for this process, and the configuration read again with the
// flags given on the command line applied over it.
func doctorConfig(cmd *cobra.Command, base config.Config, envFile string) (config.Config, error) {
	if envFile == "" {
		return base, nil
	}
	vars, err := readEnvFile(envFile)
	if errors.Is(err, fs.ErrNotExist) && !cmd.Flags().Changed("env-file") {
		return base, nil
	}
	if err != nil {
		return base, fmt.Errorf("settings file: %w (--env-file \"\" to check the environment's settings only)", err)
	}
	for k, v := range vars {
		if _, set := os.LookupEnv(k); !set {
			if err := os.Setenv(k, v); err != nil {
				return base, err
			}
		}
	}
	c := config.FromEnv()
	for flag, field := range map[string]*string{"data-dir": &c.DataDir, "database": &c.DatabaseURL} {
		if f := cmd.Flag(flag); f != nil && f.Changed {
			*field = f.Value.String()
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "bureau doctor: settings from the environment and %s\n", envFile)
	return c, nil
}

// readEnvFile reads a systemd EnvironmentFile: VAR=value lines, blank
// lines and comments (# or ;), a value optionally in quotes.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseEnvFile(f)
}

func parseEnvFile(r io.Reader) (map[string]string, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, found := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !found || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("line %d: want VAR=value, not %q", n, line)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		vars[k] = v
	}
	return vars, sc.Err()
}

// doctorChecks are the checks of a host that serves with c, in the order
// they are printed.
func doctorChecks(c config.Config) []check {
	publicHost := hostOfURL(c.PublicURL)
	setup := hostSetupCommand()
	return []check{
		{name: "accelerator", run: func(context.Context) finding { return checkAccelerator(c.Accelerator) }},
		{name: "libvirt", hung: "libvirtd does not answer: restart it (" + setup + ", or systemctl restart libvirtd)",
			run: func(ctx context.Context) finding { return checkLibvirt(ctx, c.LibvirtURI) }},
		{name: "tools", run: func(context.Context) finding { return checkTools(exec.LookPath) }},
		{name: "nftables", hung: "nft does not answer: look for a stuck nft process",
			run: func(ctx context.Context) finding { return checkNftables(ctx) }},
		{name: "network", run: func(context.Context) finding { return checkNetwork(c.NetworkSubnet, hostNetworks) }},
		{name: "disk", hung: "a file system does not answer (a hung network mount?)",
			run: func(context.Context) finding { return checkDisk(statDisk, c.DataDir, c.ImageCache) }},
		{name: "database", hung: "the database does not answer: is PostgreSQL up, or another process holding SQLite's lock?",
			run: func(ctx context.Context) finding { return checkDatabase(ctx, c.Database()) }},
		{name: "listen", hung: "something on " + c.Listen + " accepts connections but does not answer",
			run: func(ctx context.Context) finding { return checkListen(ctx, c.Listen) }},
		{name: "public-url", run: func(context.Context) finding { return checkPublicURL(c) }},
		{name: "tls", run: func(context.Context) finding { return checkTLS(c.TLS, c.TLSCert, c.TLSKey, publicHost) }},
		{name: "dns", hung: "DNS does not answer: check /etc/resolv.conf",
			run: func(ctx context.Context) finding { return checkDNS(ctx, publicHost, c.PreviewDomain) }},
	}
}

// hostOfURL is the host name of a public URL ("" when unset or bad).
func hostOfURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
