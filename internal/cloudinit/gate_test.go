package cloudinit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The image's gate (images/desktop/files/usr/local/lib/bureau/cloud-init-gate)
// lets cloud-init skip a boot only for an instance whose setup finished
// without errors and whose seed this is: it is run here against a root
// folder and a seed rendered from the real meta-data template.
const (
	imageFiles = "../../images/desktop/files"
	gateScript = imageFiles + "/usr/local/lib/bureau/cloud-init-gate"
	skipFlag   = "/run/bureau/cloud-init-skip"
)

func TestGateSkipsOnlyASetUpInstance(t *testing.T) {
	const clean = `{"v1": {"datasource": "DataSourceNoCloud [seed=/dev/sr0][dsmode=net]", "errors": []}}`
	cases := []struct {
		name     string
		seedID   string // instance id of the seed attached
		doneID   string // /var/lib/cloud/data/instance-id ("" = none)
		finished bool   // its boot-finished exists
		result   string // /var/lib/cloud/data/result.json ("" = none)
		skip     bool
	}{
		{"set up, its own seed", "d1", "d1", true, clean, true},
		{"set up, indented result", "d1", "d1", true, "{\n \"v1\": {\n  \"datasource\": \"x\",\n  \"errors\": []\n }\n}", true},
		{"a clone or reimage: a new instance id", "d1-7f3a", "d1", true, clean, false},
		{"first boot", "d1", "", false, "", false},
		{"setup cut short", "d1", "d1", false, clean, false},
		{"setup had errors", "d1", "d1", true, `{"v1": {"datasource": "x", "errors": ["('ssh', OSError())"]}}`, false},
		{"no result", "d1", "d1", true, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, seed := t.TempDir(), t.TempDir()
			cfg := testConfig()
			cfg.InstanceID = c.seedID
			files, err := Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(seed, "meta-data"), string(files["meta-data"]))
			data := filepath.Join(root, "var/lib/cloud/data")
			if c.doneID != "" {
				write(t, filepath.Join(data, "instance-id"), c.doneID+"\n")
				write(t, filepath.Join(data, "status.json"), `{"v1": {"stage": null}}`)
			}
			if c.finished {
				write(t, filepath.Join(root, "var/lib/cloud/instances", c.doneID, "boot-finished"), "1 up\n")
			}
			if c.result != "" {
				write(t, filepath.Join(data, "result.json"), c.result)
			}
			// A flag from an earlier run of the gate is never trusted.
			write(t, filepath.Join(root, skipFlag), "")

			out := runGate(t, root, seed)
			_, err = os.Stat(filepath.Join(root, skipFlag))
			if skipped := err == nil; skipped != c.skip {
				t.Fatalf("skip = %t, want %t (output %q)", skipped, c.skip, out)
			}
			link, err := os.Readlink(filepath.Join(root, "run/cloud-init/status.json"))
			if c.skip && link != "/var/lib/cloud/data/status.json" {
				t.Errorf("status.json link = %q, %v: cloud-init status would not say done", link, err)
			}
			if !c.skip && err == nil {
				t.Errorf("status.json linked (%q) at a boot cloud-init runs", link)
			}
		})
	}
}

// A path in the instance id file never leads the gate outside cloud-init's
// folder.
func TestGateRefusesOddInstanceIDs(t *testing.T) {
	for _, id := range []string{"../../etc", ".hidden", "a/b"} {
		root, seed := t.TempDir(), t.TempDir()
		write(t, filepath.Join(seed, "meta-data"), "instance-id: \""+id+"\"\n")
		write(t, filepath.Join(root, "var/lib/cloud/data/instance-id"), id)
		write(t, filepath.Join(root, "var/lib/cloud/data/result.json"), `{"v1": {"errors": []}}`)
		write(t, filepath.Join(root, "var/lib/cloud/instances", id, "boot-finished"), "")
		runGate(t, root, seed)
		if _, err := os.Stat(filepath.Join(root, skipFlag)); err == nil {
			t.Errorf("instance id %q: cloud-init skipped", id)
		}
	}
}

// Every cloud-init stage waits for the gate and takes its flag as a
// condition, and /home is grown at the boots it skips.
func TestGateUnitsAgree(t *testing.T) {
	for _, u := range []string{"cloud-init-local", "cloud-init", "cloud-config", "cloud-final"} {
		b, err := os.ReadFile(filepath.Join(imageFiles, "etc/systemd/system", u+".service.d/50-bureau.conf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"After=bureau-cloud-init-gate.service", "ConditionPathExists=!" + skipFlag} {
			if !strings.Contains(string(b), want+"\n") {
				t.Errorf("%s's drop-in lacks %q", u, want)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(imageFiles, "etc/systemd/system/cloud-init-local.service.d/50-bureau.conf"))
	if err != nil || !strings.Contains(string(b), "Wants=bureau-cloud-init-gate.service\n") {
		t.Errorf("cloud-init-local does not pull the gate in (%v)", err)
	}
	b, err = os.ReadFile(filepath.Join(imageFiles, "etc/systemd/system/bureau-grow-home.service"))
	if err != nil || !strings.Contains(string(b), "ConditionPathExists="+skipFlag+"\n") {
		t.Errorf("bureau-grow-home does not run at the boots cloud-init skips (%v)", err)
	}
	for _, script := range []string{gateScript, firstBootScript, imageFiles + "/usr/local/lib/bureau/grow"} {
		if fi, err := os.Stat(script); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable (%v)", script, err)
		}
	}
}

func runGate(t *testing.T, root, seed string) string {
	t.Helper()
	return runGateWith(t, root, seed)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A new instance of bureau's image is set up by first-boot when its seed
// has bureau-setup, and cloud-init skips the boot only when that worked;
// a seed without it (an imported image's) leaves the boot to cloud-init.
func TestGateRunsFirstBootForANewInstance(t *testing.T) {
	cases := []struct {
		name      string
		setup     bool // the seed has bureau-setup
		firstBoot string
		skip      bool
	}{
		{"first-boot sets it up", true, "ok", true},
		{"first-boot fails", true, "fail", false},
		{"first-boot exits 0 without recording the instance", true, "silent", false},
		{"no bureau-setup on the seed", false, "ok", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, seed := t.TempDir(), t.TempDir()
			cfg := testConfig()
			cfg.InstanceID = "d1-new"
			cfg.InstallDesktop = !c.setup
			files, err := Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for name, b := range files {
				write(t, filepath.Join(seed, name), string(b))
			}
			// The instance set up before (a clone's or reimage's source).
			write(t, filepath.Join(root, "var/lib/cloud/data/instance-id"), "d1\n")
			write(t, filepath.Join(root, "var/lib/cloud/data/result.json"), `{"v1": {"errors": []}}`)
			write(t, filepath.Join(root, "var/lib/cloud/instances/d1/boot-finished"), "")
			calls := filepath.Join(root, "first-boot-calls")
			fake := filepath.Join(t.TempDir(), "first-boot")
			write(t, fake, `#!/bin/sh
echo "$@" >> `+calls+`
case `+c.firstBoot+` in
fail) exit 1 ;;
silent) exit 0 ;;
esac
echo "$2" > `+root+`/var/lib/cloud/data/instance-id
mkdir -p `+root+`/var/lib/cloud/instances/$2 && : > `+root+`/var/lib/cloud/instances/$2/boot-finished
`)
			os.Chmod(fake, 0o755)

			out := runGateWith(t, root, seed, "BUREAU_GATE_FIRST_BOOT="+fake)
			_, err = os.Stat(filepath.Join(root, skipFlag))
			if skipped := err == nil; skipped != c.skip {
				t.Fatalf("skip = %t, want %t (output %q)", skipped, c.skip, out)
			}
			got, _ := os.ReadFile(calls)
			if want := seed + " d1-new\n"; c.setup && string(got) != want {
				t.Errorf("first-boot called with %q, want %q", got, want)
			}
			if !c.setup && len(got) > 0 {
				t.Errorf("first-boot ran for a seed without bureau-setup: %q", got)
			}
		})
	}
}

func runGateWith(t *testing.T, root, seed string, env ...string) string {
	t.Helper()
	cmd := exec.Command("sh", gateScript)
	cmd.Env = append(append(os.Environ(), "BUREAU_GATE_ROOT="+root, "BUREAU_GATE_SEED="+seed), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gate: %v\n%s", err, out)
	}
	return string(out)
}
