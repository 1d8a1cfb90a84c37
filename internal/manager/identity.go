package manager

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bureau/bureau/internal/desktop"
)

// identityKeys is where a warm create keeps the SSH keys its identity gives
// the guest until it has been applied.
func identityKeys(d *desktop.Desktop) string { return filepath.Join(d.Dir, "identity.keys") }

// keepIdentityKeys keeps the SSH keys seed gives the desktop until its
// identity is applied, so a restart can apply it. Warm creates are bureau's
// own host's: the keys are kept there.
func keepIdentityKeys(ctx context.Context, files LocalFiles, d *desktop.Desktop, seed Seed) error {
	if err := files.WriteFile(ctx, identityKeys(d), []byte(strings.Join(seed.SSHKeys, "\n")), 0o600); err != nil {
		return fmt.Errorf("keeping the desktop's SSH keys: %w", err)
	}
	return nil
}

// applyIdentity gives a guest restored from a template this desktop's name,
// machine id, SSH host keys, the caller's SSH keys (on stdin, never in the
// command line) and its data disk size. Applying it twice is harmless.
func (n *identities) applyIdentity(ctx context.Context, d *desktop.Desktop) error {
	n.ops.step(ctx, d, stepWarmIdentity)
	keys, err := n.keys.ReadFile(ctx, identityKeys(d))
	if err != nil {
		return fmt.Errorf("the desktop's SSH keys: %w", err)
	}
	files, err := identityFiles(d.Name, string(keys))
	if err != nil {
		return err
	}
	vm := n.defs.VMConfig(d, "")
	// The data disk grows first, so one guest command does the rest.
	grow := "no"
	if d.DataDiskGiB > templateDataGiB {
		if err := n.vms.ResizeDisk(ctx, vm.Name, d.DataDiskPath, int64(d.DataDiskGiB)<<30); err != nil {
			return fmt.Errorf("data disk size: %w", err)
		}
		grow = "grow"
	}
	machineID := make([]byte, 16)
	rand.Read(machineID)
	// The guest agent's channel reconnects a moment after the restore.
	for deadline := time.Now().Add(time.Minute); ; {
		var res *desktop.ExecResult
		now := time.Now()
		res, err = n.vms.GuestExec(ctx, vm.Name, desktop.Exec{Argv: []string{"/bin/sh", "-c", identityScript, "sh",
			d.Name, grow, vm.MAC, layoutOf(d), hex.EncodeToString(machineID), fmt.Sprintf("%d.%03d", now.Unix(), now.Nanosecond()/1e6)}, Stdin: files})
		if err == nil && res.ExitCode != 0 {
			return fmt.Errorf("applying the desktop's identity: exit %d: %s", res.ExitCode, res.Stderr)
		}
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("applying the desktop's identity: %w", err)
	}
	n.keys.Remove(ctx, identityKeys(d))
	// The clock set exactly right before the desktop counts as running
	// (the agent is warm by now: ~0.1 s); retried in the background if
	// that fails.
	if err := n.vms.SyncGuestClock(ctx, vm.Name); err != nil {
		n.clock.syncClock(d)
	}
	return nil
}

// identityFiles is identityScript's stdin: the guest's new SSH host keys
// (made here: ssh-keygen costs ~0.2 s a key under emulation) and the
// caller's SSH keys, each file after a "--- name" line.
func identityFiles(name, authorized string) ([]byte, error) {
	var b bytes.Buffer
	section := func(file string, body []byte) {
		fmt.Fprintf(&b, "--- %s\n", file)
		b.Write(body)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("SSH host key: %w", err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("SSH host key: %w", err)
	}
	for _, k := range []struct {
		file string
		priv crypto.PrivateKey
		pub  crypto.PublicKey
	}{{"ed25519", edPriv, edPub}, {"ecdsa", ec, &ec.PublicKey}} {
		block, err := ssh.MarshalPrivateKey(k.priv, "root@"+name)
		if err != nil {
			return nil, fmt.Errorf("SSH host key: %w", err)
		}
		pub, err := ssh.NewPublicKey(k.pub)
		if err != nil {
			return nil, fmt.Errorf("SSH host key: %w", err)
		}
		section(k.file, pem.EncodeToMemory(block))
		section(k.file+".pub", []byte(strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(pub)), "\n")+" root@"+name+"\n"))
	}
	var lines []string
	for _, l := range strings.Split(authorized, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if strings.HasPrefix(l, "---") {
			return nil, fmt.Errorf("SSH key %q: not an authorized_keys line", l)
		}
		lines = append(lines, l)
	}
	section("authorized_keys", []byte(strings.Join(lines, "\n")))
	return b.Bytes(), nil
}

// identityScript runs as root in a guest restored from a template; $1 is
// the desktop's name (validated [a-z0-9-]), $2 "grow" when the data disk was
// enlarged, $3 its NIC's MAC address, $4 its keyboard layout, $5 its new
// machine id, $6 the host's time when it was sent, stdin identityFiles. Every program started costs 50–300 ms
// under emulation: it uses the shell's builtins where it can and avoids
// D-Bus round trips (hostnamectl, waiting for sshd).
const identityScript = layoutScript + growHomeFn + `set -e
# The clock the template was saved with, set about right for the files
# written here (bureau sets it exactly once the identity is applied).
date -u -s "@$6" >/dev/null 2>&1 || true
echo "$1" > /proc/sys/kernel/hostname
echo "$1" > /etc/hostname
# /etc/hosts names the template: rewritten with builtins (sed alone takes
# ~0.4 s in a guest just restored).
hosts=
while IFS= read -r l || [ -n "$l" ]; do
	r=
	while :; do case $l in *` + templateHost + `*) r=$r${l%%` + templateHost + `*}$1; l=${l#*` + templateHost + `};; *) break;; esac; done
	hosts=$hosts$r$l'
'
done < /etc/hosts
printf '%s' "$hosts" > /etc/hosts
# Not systemd-machine-id-setup: it would derive the template's id again
# from the VM's SMBIOS UUID, which the restored RAM still carries.
echo "$5" > /etc/machine-id
[ -L /var/lib/dbus/machine-id ] || ln -sf /etc/machine-id /var/lib/dbus/machine-id
rm -f /etc/ssh/ssh_host_*
[ -d /home/agent/.ssh ] || install -d -m 700 -o agent -g agent /home/agent/.ssh
ak=/home/agent/.ssh/authorized_keys
while IFS= read -r line; do
	case $line in
	"--- "*)
		case ${line#--- } in
		ed25519|ecdsa) f=/etc/ssh/ssh_host_${line#--- }_key; umask 077;;
		ed25519.pub|ecdsa.pub) f=/etc/ssh/ssh_host_${line#--- }; f=${f%.pub}_key.pub; umask 022;;
		authorized_keys) f=$ak; umask 077;;
		*) echo "unknown identity file: $line" >&2; exit 2;;
		esac
		exec 3> "$f"
		continue;;
	esac
	printf '%s\n' "$line" >&3
done
exec 3>&-
umask 022
# Made just now by root: the user's own, as ssh wants it.
if [ -O "$ak" ]; then chown agent: "$ak"; fi
# sshd re-executes itself on SIGHUP and loads the new host keys.
if read -r pid 2>/dev/null < /run/sshd.pid; then kill -HUP "$pid" 2>/dev/null || true; fi
if [ "$2" = grow ]; then grow_home >/dev/null 2>&1 || true; fi
# The template's MAC address and DHCP lease came along in its RAM: every
# desktop on the network needs its own (the host's rules know this one).
for nic in /sys/class/net/*; do
	[ -e "$nic/device" ] || continue
	dev=${nic##*/}
	printf 'link set dev %s down\nlink set dev %s address %s\nlink set dev %s up\n' "$dev" "$dev" "$3" "$dev"
done | ip -batch -
# networkd asks DHCP with an id made from the machine id: restarted, it asks
# with this desktop's (a reconfigure would keep the template's, and its
# address).
systemctl --no-block restart systemd-networkd >/dev/null 2>&1 </dev/null &
# The session already runs with the template's layout: only another one is
# set (setxkbmap has the X server compile a keymap, 2 s under emulation).
kb=/etc/X11/xorg.conf.d/00-bureau-keyboard.conf layout=
if [ -f $kb ]; then while IFS= read -r l; do case $l in *XkbLayout*) layout=$l;; esac; done < $kb; fi
case $layout in *"\"XkbLayout\" \"$4\""*) ;; *) set_layout "$4";; esac`
