package cloudinit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// first-boot (images/desktop/files/usr/local/lib/bureau/first-boot) is run
// here through the gate against a root folder, with the system's commands
// replaced by stubs that log their calls and act on that folder: a blank
// data disk is partitioned and formatted, one that holds a file system
// never is, and the instance ends up set up as cloud-init would leave it.
const firstBootScript = imageFiles + "/usr/local/lib/bureau/first-boot"

// stubs are the commands first-boot runs, each logging "name args" to
// $STUB_LOG. Disks are files under $R/dev: empty means blank (blkid, as
// the real one, finds a new partition's table entry even then).
var stubs = map[string]string{
	"blkid":                    `case "$4" in *1) echo PART_ENTRY_NUMBER=1 ;; *) [ -s "$4" ] || exit 2 ;; esac; [ ! -s "$4" ] || echo TYPE=ext4`,
	"sfdisk":                   `cat >/dev/null; : > "${4}1"`,
	"mkfs.ext4":                `echo ext4 > "$4"`,
	"mount":                    `echo "$1" >> "$R/.mounted"`,
	"mountpoint":               `grep -qxF "$2" "$R/.mounted" 2>/dev/null`,
	"useradd":                  `eval "u=\${$#}"; echo "$u:x:1000:1000::/home/$u:/bin/bash" >> "$R/etc/passwd"; mkdir -p "$R/home/$u"`,
	"id":                       `grep -q "^$2:" "$R/etc/passwd" 2>/dev/null`,
	"ssh-keygen":               `while [ $# -gt 1 ]; do [ "$1" = -f ] && f=$2; shift; done; : > "$f"; : > "$f.pub"`,
	"systemd-machine-id-setup": `echo 0123456789abcdef0123456789abcdef > "$R/etc/machine-id"`,
	"growpart":                 ``, "resize2fs": ``, "e2fsck": ``, "hostname": ``,
	"usermod": ``, "chown": ``, "systemctl": ``,
}

type firstBootRun struct {
	root, seed string
	calls      []string
	out        string
}

func (r *firstBootRun) called(prefix string) bool {
	for _, c := range r.calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func (r *firstBootRun) read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, path))
	if err != nil {
		t.Fatalf("first-boot did not write %s: %v", path, err)
	}
	return string(b)
}

// runFirstBoot prepares a root with the image's fstab and a data disk
// (dataDisk: "" blank, else its partition's content), runs the gate with
// the real first-boot and returns what happened.
func runFirstBoot(t *testing.T, cfg Config, dataDisk string, grown bool) *firstBootRun {
	t.Helper()
	r := &firstBootRun{root: t.TempDir(), seed: t.TempDir()}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "calls")
	for name, body := range stubs {
		write(t, filepath.Join(bin, name), "#!/bin/sh\necho \""+name+" $*\" >> \"$STUB_LOG\"\n"+body+"\n")
		os.Chmod(filepath.Join(bin, name), 0o755)
	}
	files, err := Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		write(t, filepath.Join(r.seed, name), string(b))
	}
	write(t, filepath.Join(r.root, "etc/fstab"), "UUID=x / ext4 defaults,errors=remount-ro 0 1\n")
	write(t, filepath.Join(r.root, "etc/ssh/ssh_host_rsa_key"), "the image's")
	write(t, filepath.Join(r.root, "etc/machine-id"), "its source's\n")
	write(t, filepath.Join(r.root, "dev/vdb"), "")
	if dataDisk != "" {
		write(t, filepath.Join(r.root, "dev/vdb"), "dos")
		write(t, filepath.Join(r.root, "dev/vdb1"), dataDisk)
	}
	// The data disk's partition fills its disk, unless grown says it was
	// grown by 1 GiB (a clone asking for more); the OS disk is larger
	// than its root partition (a new OS disk, grown later, not here).
	vdb := "8388608"
	if grown {
		vdb = "10485760"
	}
	for dev, v := range map[string]string{"vda/size": "20971520", "vda1/start": "2048", "vda1/size": "8388608",
		"vdb/size": vdb, "vdb1/start": "2048", "vdb1/size": "8386560"} {
		write(t, filepath.Join(r.root, "sys/class/block", dev), v+"\n")
	}
	r.out = runGateWith(t, r.root, r.seed, "BUREAU_GATE_FIRST_BOOT="+firstBootScript,
		"PATH="+bin+":"+os.Getenv("PATH"), "STUB_LOG="+log, "R="+r.root)
	b, _ := os.ReadFile(log)
	r.calls = strings.Split(strings.TrimSpace(string(b)), "\n")
	return r
}

func TestFirstBootSetsUpANewInstance(t *testing.T) {
	cfg := testConfig()
	cfg.InstanceID = "d1-2b"
	cfg.KeyboardLayout = "de"
	cfg.SSHKeys = []string{"ssh-ed25519 AAAAC3Nza one@host", "ssh-ed25519 AAAAC3Nzb two@host"}
	cfg.Agent = []byte("#!/bin/true\n")
	r := runFirstBoot(t, cfg, "", false)

	if _, err := os.Stat(filepath.Join(r.root, skipFlag)); err != nil {
		t.Fatalf("cloud-init not skipped after first-boot: %v\n%s\ncalls: %q", err, r.out, r.calls)
	}
	// The blank data disk is partitioned, formatted and mounted as /home.
	for _, want := range []string{"sfdisk --quiet --label dos " + r.root + "/dev/vdb", "mkfs.ext4 -q -L agentdata " + r.root + "/dev/vdb1", "mount " + r.root + "/home"} {
		if !r.called(want) {
			t.Errorf("no %q in %q", want, r.calls)
		}
	}
	fstab := r.read(t, "etc/fstab")
	if !strings.Contains(fstab, "LABEL=agentdata\t/home\text4\tdefaults,nofail,x-systemd.device-timeout=30s,comment=cloudconfig\t0\t2\n") {
		t.Errorf("fstab = %q", fstab)
	}
	// /home's file system fills its disk; the root grows later.
	if r.called("growpart") {
		t.Errorf("growpart calls: %q", r.calls)
	}
	if got := r.read(t, "etc/hostname"); got != "agent-1\n" {
		t.Errorf("hostname = %q", got)
	}
	if got := r.read(t, "etc/hosts"); !strings.HasPrefix(got, "127.0.1.1 agent-1.local agent-1\n") {
		t.Errorf("hosts = %q", got)
	}
	if got := r.read(t, "etc/machine-id"); got == "its source's\n" {
		t.Error("a clone kept its source's machine id")
	}
	if _, err := os.Stat(filepath.Join(r.root, "etc/ssh/ssh_host_rsa_key")); err == nil {
		t.Error("the image's SSH host key was kept")
	}
	for _, k := range []string{"ed25519", "ecdsa"} {
		r.read(t, "etc/ssh/ssh_host_"+k+"_key")
	}
	if got := r.read(t, "etc/X11/xorg.conf.d/00-bureau-keyboard.conf"); !strings.Contains(got, `"XkbLayout" "de"`) {
		t.Errorf("keyboard = %q", got)
	}
	if !r.called("useradd --root " + r.root + " --create-home --shell /bin/bash --comment bureau desktop user --groups sudo agent") {
		t.Errorf("useradd: %q", r.calls)
	}
	if got := r.read(t, "etc/sudoers.d/90-bureau-users"); !strings.Contains(got, "\nagent ALL=(ALL) NOPASSWD:ALL\n") {
		t.Errorf("sudoers = %q", got)
	}
	if got := r.read(t, "home/agent/.ssh/authorized_keys"); got != "ssh-ed25519 AAAAC3Nza one@host\nssh-ed25519 AAAAC3Nzb two@host\n" {
		t.Errorf("authorized_keys = %q", got)
	}
	if got := r.read(t, "usr/local/bin/bureau-agent"); got != "#!/bin/true\n" {
		t.Errorf("bureau-agent = %q", got)
	}
	// Recorded as cloud-init records a set-up instance: the ready probe
	// (internal/guest) and `cloud-init status` see it done.
	if got := r.read(t, "var/lib/cloud/data/instance-id"); got != "d1-2b\n" {
		t.Errorf("instance-id = %q", got)
	}
	r.read(t, "var/lib/cloud/instances/d1-2b/boot-finished")
	if link, _ := os.Readlink(filepath.Join(r.root, "var/lib/cloud/instance")); link != "/var/lib/cloud/instances/d1-2b" {
		t.Errorf("/var/lib/cloud/instance -> %q", link)
	}
	status := r.read(t, "var/lib/cloud/data/status.json")
	for _, want := range []string{`"init": {"errors": [], "start": `, `"modules-final": {"errors": [], `, `"stage": null`} {
		if !strings.Contains(status, want) {
			t.Errorf("status.json lacks %q: %s", want, status)
		}
	}
	if link, _ := os.Readlink(filepath.Join(r.root, "run/cloud-init/result.json")); link != "/var/lib/cloud/data/result.json" {
		t.Errorf("result.json link = %q", link)
	}
}

// A data disk that holds a file system (a reimage's, a clone's, a
// restore's) is never partitioned or formatted, and /home keeps it.
func TestFirstBootKeepsADataDiskWithAFileSystem(t *testing.T) {
	r := runFirstBoot(t, testConfig(), "ext4 with the user's files", true)
	if r.called("sfdisk") || r.called("mkfs") {
		t.Fatalf("a data disk with a file system was touched: %q", r.calls)
	}
	// A clone's data disk, larger than its source's: grown, checked
	// first as it is not mounted yet, before it is mounted.
	want := []string{"growpart " + r.root + "/dev/vdb 1", "e2fsck -fp " + r.root + "/dev/vdb1", "resize2fs " + r.root + "/dev/vdb1", "mount " + r.root + "/home"}
	var got []string
	for _, c := range r.calls {
		for _, w := range want {
			if c == w {
				got = append(got, c)
			}
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("grow and mount: %q, want %q in that order (all calls %q)", got, want, r.calls)
	}
	if !r.called("mount " + r.root + "/home") {
		t.Errorf("/home not mounted: %q", r.calls)
	}
	if got := r.read(t, "dev/vdb1"); got != "ext4 with the user's files" {
		t.Errorf("data disk now %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.root, skipFlag)); err != nil {
		t.Errorf("not set up: %s", r.out)
	}
}

// Bad values in bureau-setup (it is checked again in the guest) stop
// first-boot before it changes anything, and cloud-init runs.
func TestFirstBootRefusesBadSettings(t *testing.T) {
	for _, line := range []string{"hostname=-x", "hostname=a;reboot", "user=Root", "keyboard=us;x"} {
		root, seed := t.TempDir(), t.TempDir()
		files, err := Render(testConfig())
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			write(t, filepath.Join(seed, name), string(b))
		}
		key := strings.SplitN(line, "=", 2)[0]
		var setup []string
		for _, l := range strings.Split(string(files["bureau-setup"]), "\n") {
			if strings.HasPrefix(l, key+"=") {
				l = line
			}
			setup = append(setup, l)
		}
		write(t, filepath.Join(seed, "bureau-setup"), strings.Join(setup, "\n"))
		cmd := exec.Command("sh", firstBootScript, seed, "d1")
		cmd.Env = append(os.Environ(), "BUREAU_GATE_ROOT="+root)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%s: first-boot succeeded: %s", line, out)
		}
		if entries, _ := os.ReadDir(root); len(entries) > 0 {
			t.Errorf("%s: first-boot wrote %v", line, entries)
		}
	}
}
