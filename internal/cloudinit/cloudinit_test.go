package cloudinit

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	diskfs "github.com/diskfs/go-diskfs"
)

func testConfig() Config {
	return Config{DesktopID: "d1", InstanceID: "d1", Hostname: "agent-1", User: "agent",
		SSHKeys: []string{"ssh-ed25519 AAAAC3Nza test@host"}}
}

func TestRenderUserData(t *testing.T) {
	files, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	ud := string(files["user-data"])
	for _, want := range []string{
		"#cloud-config\n", `hostname: "agent-1"`, `- name: "agent"`,
		"layout: [100]", "overwrite: false", `"LABEL=agentdata", "/home"`,
		`- "ssh-ed25519 AAAAC3Nza test@host"`,
	} {
		if !strings.Contains(ud, want) {
			t.Errorf("user-data lacks %q:\n%s", want, ud)
		}
	}
	if md := string(files["meta-data"]); md != "instance-id: \"d1\"\nlocal-hostname: \"agent-1\"\n" {
		t.Errorf("meta-data = %q", md)
	}
	if !strings.Contains(ud, `Option "XkbLayout" "%s"\nEndSection\n' "us"`) {
		t.Errorf("user-data does not set the default keyboard layout:\n%s", ud)
	}
	de := testConfig()
	de.KeyboardLayout = "de"
	if files, err := Render(de); err != nil || !strings.Contains(string(files["user-data"]), `"de" > "$f"`) {
		t.Errorf("German layout: %v\n%s", err, files["user-data"])
	}
	de.KeyboardLayout = "de; rm -rf /"
	if _, err := Render(de); err == nil {
		t.Error("a layout that is not an XKB name was rendered")
	}
	noKeys := testConfig()
	noKeys.SSHKeys = nil
	files, _ = Render(noKeys)
	if strings.Contains(string(files["user-data"]), "ssh_authorized_keys") {
		t.Error("ssh_authorized_keys rendered without keys")
	}
}

// A seed with the agent carries its binary and installs it at boot when
// the desktop has none; without one there is no trace of it.
func TestRenderCarriesTheAgent(t *testing.T) {
	files, _ := Render(testConfig())
	if _, ok := files["bureau-agent"]; ok || strings.Contains(string(files["user-data"]), "bureau-agent") {
		t.Error("agent rendered without a binary")
	}
	c := testConfig()
	c.Agent = []byte("\x7fELF binary")
	files, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	ud := string(files["user-data"])
	if string(files["bureau-agent"]) != "\x7fELF binary" {
		t.Error("the seed lacks the binary")
	}
	for _, want := range []string{`mount -o ro "$(blkid -L cidata)"`, "install -m 0755", "KillMode=process", "systemctl start --no-block bureau-agent.service"} {
		if !strings.Contains(ud, want) {
			t.Errorf("user-data lacks %q:\n%s", want, ud)
		}
	}
	// The unit it writes for an imported image is the one bureau's own image
	// ships, enabled, so that a desktop of either runs the agent the same way.
	baked, err := os.ReadFile("../../images/desktop/files/etc/systemd/system/bureau-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	var quoted []string
	for _, line := range strings.Split(strings.TrimSuffix(string(baked), "\n"), "\n") {
		quoted = append(quoted, "'"+line+"'")
	}
	if want := "printf '%s\\n' " + strings.Join(quoted, " ") + " > /etc/systemd/system/bureau-agent.service"; !strings.Contains(ud, want) {
		t.Errorf("user-data's unit differs from the image's bureau-agent.service:\nwant %s\nin:\n%s", want, ud)
	}
	// Still the layout step before it, and well-formed YAML around both.
	if !strings.Contains(ud, "EndSection\\n' \"us\" > \"$f\"\n    fi\n  # bureau-agent") {
		t.Errorf("the agent step does not follow the layout step:\n%s", ud)
	}
}

func TestRenderInstallsDesktopOnlyForImportedImages(t *testing.T) {
	files, _ := Render(testConfig())
	if strings.Contains(string(files["user-data"]), "packages:") {
		t.Error("built image gets a package installation")
	}
	c := testConfig()
	c.InstallDesktop = true
	files, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	ud := string(files["user-data"])
	for _, want := range []string{"packages:\n", "  - qemu-guest-agent\n", "  - xfce4-session\n", "autologin-user=agent\n",
		`"BlankTime" "0"`, "[ systemctl, enable, --now, qemu-guest-agent ]"} {
		if !strings.Contains(ud, want) {
			t.Errorf("user-data lacks %q", want)
		}
	}
	// It must stay one YAML document with the keys cloud-init reads at top level.
	for _, key := range []string{"\npackages:", "\nwrite_files:", "\nruncmd:", "\npackage_update: true"} {
		if strings.Count(ud, key) != 1 {
			t.Errorf("top-level key %q appears %d times", key, strings.Count(ud, key))
		}
	}
}

func TestRenderRejectsInjection(t *testing.T) {
	for _, c := range []Config{
		func() Config { c := testConfig(); c.Hostname = "a\nruncmd: [reboot]"; return c }(),
		func() Config { c := testConfig(); c.SSHKeys = []string{"ssh-rsa AAA\n- evil"}; return c }(),
		func() Config { c := testConfig(); c.SSHKeys = []string{"not a key"}; return c }(),
		func() Config { c := testConfig(); c.User = ""; return c }(),
	} {
		if _, err := Render(c); err == nil {
			t.Errorf("Render(%+v) accepted bad input", c)
		}
	}
}

func TestWriteSeedIsReadableCidataISO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed.iso")
	c := testConfig()
	c.Agent = make([]byte, 3<<20) // the size of the real binary
	if err := WriteSeed(context.Background(), path, c); err != nil {
		t.Fatal(err)
	}
	want, _ := Render(c)
	d, err := diskfs.Open(path, diskfs.WithOpenMode(diskfs.ReadOnly))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := d.GetFilesystem(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimRight(fs.Label(), " \x00"); got != "cidata" {
		t.Errorf("volume label = %q, want cidata", got)
	}
	// NoCloud finds the seed by the label blkid reports.
	if blkid, err := exec.LookPath("blkid"); err == nil {
		out, err := exec.Command(blkid, "-p", "-o", "value", "-s", "LABEL", path).Output()
		if err != nil || strings.TrimSpace(string(out)) != "cidata" {
			t.Errorf("blkid label = %q, %v; want cidata", out, err)
		}
	}
	for name, content := range want {
		f, err := fs.OpenFile("/"+name, os.O_RDONLY)
		if err != nil {
			t.Fatalf("open %s in ISO: %v", name, err)
		}
		got, _ := io.ReadAll(f)
		if string(got) != string(content) {
			t.Errorf("%s in ISO differs:\n%s", name, got)
		}
	}
	// cloud-init mounts the ISO with the kernel's driver, which needs Rock
	// Ridge names; isoinfo shows what the kernel would see.
	if isoinfo, err := exec.LookPath("isoinfo"); err == nil {
		out, err := exec.Command(isoinfo, "-R", "-f", "-i", path).CombinedOutput()
		if err != nil {
			t.Fatalf("isoinfo: %v\n%s", err, out)
		}
		for _, n := range []string{"/user-data", "/meta-data", "/network-config", "/bureau-agent"} {
			if !strings.Contains(string(out), n+"\n") {
				t.Errorf("isoinfo -R lists no %s:\n%s", n, out)
			}
		}
	}
	if _, err := os.Stat(path + ".partial"); !os.IsNotExist(err) {
		t.Error("temporary file left behind")
	}
}
