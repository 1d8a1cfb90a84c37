package cloudinit

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// FuzzRender: whatever hostname and SSH key a caller sends, the seed either
// refuses it or is YAML that says exactly that hostname and key — nothing
// smuggled into other cloud-init settings.
func FuzzRender(f *testing.F) {
	f.Add("agent-1", "ssh-ed25519 AAAAC3Nza me@host")
	f.Add("a\nruncmd: [x]", "ssh-rsa AAAA\n- evil")
	f.Add("x", `ssh-ed25519 "quoted" \ back`)
	f.Add("x", "sk-ssh-ed25519@openssh.com AAAA key: value # comment")
	f.Fuzz(func(t *testing.T, host, key string) {
		files, err := Render(Config{DesktopID: "d1", InstanceID: "d1", Hostname: host, User: "agent", SSHKeys: []string{key}})
		if err != nil {
			return
		}
		var ud struct {
			Hostname string `yaml:"hostname"`
			Users    []struct {
				Name string   `yaml:"name"`
				Keys []string `yaml:"ssh_authorized_keys"`
			} `yaml:"users"`
			RunCmd []any `yaml:"runcmd"`
		}
		if err := yaml.Unmarshal(files["user-data"], &ud); err != nil {
			t.Fatalf("accepted input %q / %q renders invalid YAML: %v\n%s", host, key, err, files["user-data"])
		}
		if strings.TrimSpace(ud.Hostname) != strings.TrimSpace(host) {
			t.Fatalf("hostname %q became %q", host, ud.Hostname)
		}
		if len(ud.Users) != 1 || len(ud.Users[0].Keys) != 1 || ud.Users[0].Keys[0] != key {
			t.Fatalf("key %q became %+v", key, ud.Users)
		}
		if len(ud.RunCmd) != 0 {
			t.Fatalf("input %q / %q added runcmd", host, key)
		}
	})
}
