package guest

import (
	"slices"
	"strings"
	"testing"

	"github.com/bureau/bureau/internal/agent/client"
)

func TestDesktopEntryExec(t *testing.T) {
	for _, c := range []struct {
		exec     string
		terminal bool
		want     []string
		err      string
	}{
		{exec: "mousepad %U", want: []string{"mousepad"}},
		{exec: "xfce4-terminal", want: []string{"xfce4-terminal"}},
		{exec: "/usr/bin/app --new-window %f --flag", want: []string{"/usr/bin/app", "--new-window", "--flag"}},
		{exec: "app %i --name %c --from %k", want: []string{"app", "--icon", "accessories-text-editor", "--name", "Text Editor", "--from", "/usr/share/applications/org.xfce.mousepad.desktop"}},
		{exec: "app --title=%c --percent=100%%", want: []string{"app", "--title=Text Editor", "--percent=100%"}},
		{exec: `sh -c "echo \\"hi there\\" \\$HOME; sleep 1" %F`, want: []string{"sh", "-c", `echo "hi there" $HOME; sleep 1`}},
		{exec: `app "" "%f" \s`, want: []string{"app", "", ""}},
		{exec: "app\\sname \\\\s", want: []string{"app", "name", `\s`}}, // \s is a space: a separator
		{exec: "htop", terminal: true, want: []string{"x-terminal-emulator", "-e", "htop"}},
		{exec: "app %u %d %D %n %N %v %m", want: []string{"app"}},
		{exec: `app "unterminated`, err: "unterminated quote"},
		{exec: "%F", err: "names no program"},
	} {
		content := "[Desktop Entry]\nType=Application\nName=Text Editor\nName[de]=Texteditor\nIcon=accessories-text-editor\nExec=" +
			c.exec + "\n"
		if c.terminal {
			content += "Terminal=true\n"
		}
		content += "[Desktop Action new]\nExec=other\n"
		e, err := parseDesktopEntry("/usr/share/applications/org.xfce.mousepad.desktop", []byte(content))
		if err != nil {
			t.Fatalf("%q: %v", c.exec, err)
		}
		if e.id != "org.xfce.mousepad" || e.name != "Text Editor" {
			t.Errorf("%q: %+v", c.exec, e)
		}
		got, err := e.argv()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v %v, want an error %q", c.exec, got, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q %v, want %q", c.exec, got, err, c.want)
		}
	}
}

func TestDesktopEntryThatIsNoApp(t *testing.T) {
	for content, want := range map[string]string{
		"[Desktop Entry]\nType=Link\nURL=https://example.com\n":     "a Link",
		"[Desktop Entry]\nType=Application\nDBusActivatable=true\n": "no Exec=",
		"[Desktop Action x]\nExec=foo\n":                            "no Exec=",
	} {
		if _, err := parseDesktopEntry("x.desktop", []byte(content)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", content, err)
		}
	}
}

func TestPickWindowPrefersTheAppsProcess(t *testing.T) {
	parents := map[int]int{300: 200, 200: 100, 900: 1}
	parent := func(p int) int { return parents[p] }
	fresh := []client.Window{{ID: "0x1", PID: 900}, {ID: "0x2", PID: 300}, {ID: "0x3", PID: 100}}
	if w := pickWindow(fresh, 200, parent); w.ID != "0x2" {
		t.Errorf("a child's window: %s", w.ID)
	}
	if w := pickWindow(fresh, 100, parent); w.ID != "0x2" {
		t.Errorf("a grandchild's window first in the list: %s", w.ID)
	}
	if w := pickWindow(fresh, 4242, parent); w.ID != "0x1" {
		t.Errorf("nobody's: %s", w.ID)
	}
}
