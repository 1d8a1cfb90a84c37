package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/images"
)

// repoRoot is the checkout this test runs in (cmd/bureau is two down).
const repoRoot = "../.."

// runInstall runs scripts/install.sh staged under dest with PREFIX
// prefix, taking the binaries from bin, and returns what it said.
func runInstall(t *testing.T, dest, prefix, bin string) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "install.sh"))
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INSTALL_DEPS=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "DESTDIR="+dest, "PREFIX="+prefix, "BUREAU_INSTALL_BIN_DIR="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	return string(out)
}

// fakeBinaries makes a folder holding tiny bureau and bureau-agent
// scripts, in place of make build's.
func fakeBinaries(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"bureau", "bureau-agent"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho "+name+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func wantMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if got := fi.Mode() & (os.ModePerm | os.ModeDir); got != mode {
		t.Errorf("%s: mode %v, want %v", path, got, mode)
	}
}

// unitValue is the value of key= in the unit file (the last one).
func unitValue(t *testing.T, unit []byte, key string) string {
	t.Helper()
	v := ""
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		if rest, found := strings.CutPrefix(sc.Text(), key+"="); found {
			v = rest
		}
	}
	if v == "" {
		t.Errorf("the unit has no %s=", key)
	}
	return v
}

func TestInstall(t *testing.T) {
	bin := fakeBinaries(t)
	dest := t.TempDir()
	runInstall(t, dest, "/usr/local", bin)

	wantMode(t, filepath.Join(dest, "usr/local/bin/bureau"), 0o755)
	wantMode(t, filepath.Join(dest, "usr/local/bin/bureau-agent"), 0o755)
	wantMode(t, filepath.Join(dest, "usr/local/share/bureau/scripts/host-setup.sh"), 0o755)
	wantMode(t, filepath.Join(dest, "usr/local/share/doc/bureau/install.md"), 0o644)
	wantMode(t, filepath.Join(dest, "etc/bureau/bureau.env"), 0o600)
	wantMode(t, filepath.Join(dest, "lib/systemd/system/bureau.service"), 0o644)
	// 0711, as serve keeps it: desktops' QEMU users pass through it.
	wantMode(t, filepath.Join(dest, "var/lib/bureau"), os.ModeDir|0o711)
	wantMode(t, filepath.Join(dest, "var/cache/bureau"), os.ModeDir|0o755)
	wantMode(t, filepath.Join(dest, "var/cache/bureau/images"), os.ModeDir|0o755)

	// The recipe as in the checkout: the same hash, so the same cached
	// image; its scripts still executable.
	recipe := filepath.Join(dest, "usr/local/share/bureau/images/desktop")
	wantMode(t, filepath.Join(recipe, "customize.sh"), 0o755)
	got, err1 := images.RecipeHash(recipe)
	want, err2 := images.RecipeHash(filepath.Join(repoRoot, "images/desktop"))
	if err1 != nil || err2 != nil || got != want {
		t.Errorf("installed recipe's hash %s (%v), the checkout's %s (%v)", got, err1, want, err2)
	}

	env, err := os.ReadFile(filepath.Join(dest, "etc/bureau/bureau.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"BUREAU_DATA_DIR=/var/lib/bureau", "BUREAU_IMAGE_CACHE=/var/cache/bureau/images",
		"BUREAU_RECIPE_DIR=/usr/local/share/bureau/images/desktop"} {
		if !slices.Contains(strings.Split(string(env), "\n"), line) {
			t.Errorf("bureau.env does not set %s", line)
		}
	}
	vars, err := parseEnvFile(bytes.NewReader(env))
	if err != nil || len(vars) != 3 {
		t.Errorf("bureau.env sets %v (%v): want the three folders only, the rest commented out with their defaults", vars, err)
	}

	unit, err := os.ReadFile(filepath.Join(dest, "lib/systemd/system/bureau.service"))
	if err != nil {
		t.Fatal(err)
	}
	exe := unitValue(t, unit, "ExecStart")
	if exe != "/usr/local/bin/bureau serve" {
		t.Errorf("ExecStart=%s, want the installed binary", exe)
	}
	envFile := unitValue(t, unit, "EnvironmentFile")
	if envFile != "/etc/bureau/bureau.env" {
		t.Errorf("EnvironmentFile=%s, want the installed settings", envFile)
	}
	if unitValue(t, unit, "KillMode") != "process" {
		t.Error("KillMode is not process: stopping bureau could take desktops down")
	}
	verifyUnit(t, dest, unit)

	// A second run (an upgrade) keeps the operator's settings, and puts
	// this version's beside them.
	mine := append(env, []byte("BUREAU_LISTEN=0.0.0.0:9000\n")...)
	if err := os.WriteFile(filepath.Join(dest, "etc/bureau/bureau.env"), mine, 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(recipe, "left-over.sh"), []byte("#!/bin/sh\n"), 0o755)
	out := runInstall(t, dest, "/usr/local", bin)
	if kept, _ := os.ReadFile(filepath.Join(dest, "etc/bureau/bureau.env")); !bytes.Equal(kept, mine) {
		t.Error("the second install overwrote bureau.env")
	}
	wantMode(t, filepath.Join(dest, "etc/bureau/bureau.env.new"), 0o600)
	if fresh, _ := os.ReadFile(filepath.Join(dest, "etc/bureau/bureau.env.new")); !bytes.Equal(fresh, env) {
		t.Error("bureau.env.new is not this version's settings file")
	}
	if !strings.Contains(out, "bureau.env.new") {
		t.Errorf("the second install did not say where the new settings went:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(recipe, "left-over.sh")); err == nil {
		t.Error("a file left in the old recipe survived the upgrade: it would change the recipe's hash")
	}
}

// verifyUnit runs systemd-analyze verify on the installed unit, its
// ExecStart and EnvironmentFile pointed into dest (verify checks that the
// binary exists); the installed units it names (libvirtd…) are the host's.
func verifyUnit(t *testing.T, dest string, unit []byte) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze verify not run: systemd-analyze is not on PATH; the rest of the checks ran")
		return
	}
	dir := t.TempDir()
	staged := strings.ReplaceAll(string(unit), "ExecStart=/usr/local/", "ExecStart="+dest+"/usr/local/")
	staged = strings.ReplaceAll(staged, "EnvironmentFile=/etc/", "EnvironmentFile="+dest+"/etc/")
	path := filepath.Join(dir, "bureau.service")
	if err := os.WriteFile(path, []byte(staged), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	// verify exits 0 on settings it ignores (an unknown key, a bad
	// value) and only says so: every line about this unit is a failure.
	about := regexp.MustCompile(`(?m)^(` + regexp.QuoteMeta(path) + `|bureau\.service)\b.*$`)
	if err != nil || about.Match(out) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		return
	}
	t.Logf("systemd-analyze verify accepted the unit %s", bytes.TrimSpace(out))
}

// Another PREFIX moves the binary the unit starts and the recipe
// bureau.env names.
func TestInstallPrefix(t *testing.T) {
	dest := t.TempDir()
	runInstall(t, dest, "/opt/bureau", fakeBinaries(t))
	unit, err := os.ReadFile(filepath.Join(dest, "lib/systemd/system/bureau.service"))
	if err != nil {
		t.Fatal(err)
	}
	if exe := unitValue(t, unit, "ExecStart"); exe != "/opt/bureau/bin/bureau serve" {
		t.Errorf("ExecStart=%s", exe)
	}
	wantMode(t, filepath.Join(dest, "opt/bureau/bin/bureau"), 0o755)
	env, _ := os.ReadFile(filepath.Join(dest, "etc/bureau/bureau.env"))
	if !strings.Contains(string(env), "\nBUREAU_RECIPE_DIR=/opt/bureau/share/bureau/images/desktop\n") {
		t.Error("bureau.env does not name the recipe under the prefix")
	}
	if _, err := os.Stat(filepath.Join(dest, "opt/bureau/share/bureau/images/desktop/build.sh")); err != nil {
		t.Error(err)
	}
}

// Every setting bureau reads is in the installed settings file, set or
// commented out with its default.
func TestInstallEnvFileNamesEverySetting(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "internal/config/config.go"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(filepath.Join(repoRoot, "packaging/bureau.env"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`(?m)^#?(BUREAU_[A-Z0-9_]+)=`)
	have := map[string]bool{}
	for _, m := range named.FindAllStringSubmatch(string(env), -1) {
		have[m[1]] = true
	}
	for _, v := range regexp.MustCompile(`"(BUREAU_[A-Z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		if client := v[1] == "BUREAU_URL" || v[1] == "BUREAU_TOKEN"; !client && !have[v[1]] {
			t.Errorf("%s is read by bureau (internal/config) but not in packaging/bureau.env", v[1])
		}
	}
}
