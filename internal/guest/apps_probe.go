package guest

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// appProbeScript, run as the user, prints what launching an app needs to
// know: whether gtk-launch is there, the session's environment (its
// D-Bus, its XDG directories, read from the session's own processes) and,
// when $1 names an application, its .desktop file (file=<path>, then the
// file) from the directories given after it: <name>.desktop, then
// *.<name>.desktop ("mousepad" is org.xfce.mousepad.desktop), each as
// given and in lower case, then the one whose Name= it is. Exit 3: no
// such application.
const appProbeScript = `name=$1; shift
uid=$(id -u)
command -v gtk-launch >/dev/null 2>&1 && echo gtk-launch
[ -S "/run/user/$uid/bus" ] && echo "bus=unix:path=/run/user/$uid/bus"
for p in /proc/[0-9]*; do
  [ -O "$p" ] || continue
  read -r comm < "$p/comm" 2>/dev/null || continue
  case $comm in xfce4-session|xfce4-panel|xfwm4|xfdesktop|xfsettingsd)
    tr '\0' '\n' < "$p/environ" 2>/dev/null |
      grep -E '^(DBUS_SESSION_BUS_ADDRESS|XDG_RUNTIME_DIR|XDG_CURRENT_DESKTOP|XDG_DATA_DIRS|XDG_CONFIG_DIRS|XDG_SESSION_TYPE|DESKTOP_SESSION)=' |
      sed 's/^/env:/'
    break;;
  esac
done
[ -n "$name" ] || exit 0
lower=$(printf '%s' "$name" | tr '[:upper:]' '[:lower:]')
found() { printf 'file=%s\n' "$1"; cat "$1"; exit 0; }
for d in "$@"; do
  case $d in "~/"*) d="$HOME/${d#"~/"}";; esac
  for n in "$name" "$lower"; do
    for f in "$d/$n.desktop" "$d"/*."$n".desktop; do
      [ -f "$f" ] && found "$f"
    done
  done
done
for d in "$@"; do
  case $d in "~/"*) d="$HOME/${d#"~/"}";; esac
  f=$(grep -l -i -x -F "Name=$name" "$d"/*.desktop 2>/dev/null | head -n 1)
  [ -n "$f" ] && found "$f"
done
exit 3`

// appProbe is what appProbeScript found.
type appProbe struct {
	gtkLaunch bool
	env       map[string]string
	// entry is the application asked for; standard: its file is in one
	// of appDirs, where gtk-launch finds it by its id.
	entry    desktopEntry
	standard bool
}

// probeApps runs appProbeScript as the desktop's user; name is the
// .desktop file asked for ("" for none).
func (s *Session) probeApps(ctx context.Context, domain, name string) (*appProbe, error) {
	dirs := s.appDirs
	if dirs == nil {
		dirs = appDirs
	}
	r, err := s.x.run(ctx, domain, "", nil, append([]string{"/bin/sh", "-c", appProbeScript, "sh", name}, dirs...)...)
	if err != nil {
		return nil, err
	}
	if r.ExitCode == 3 {
		return nil, invalid("desktop_file", fmt.Sprintf("no application %q: no %s.desktop, *.%s.desktop or one named %q in %s",
			name, name, name, name, strings.Join(dirs, ", ")))
	}
	if r.ExitCode != 0 {
		return nil, fmt.Errorf("looking for the app in the guest failed (exit %d): %s", r.ExitCode, strings.TrimSpace(string(r.Stderr)))
	}
	pr := &appProbe{env: map[string]string{}}
	out := string(r.Stdout)
	var bus string
	for out != "" {
		var line string
		line, out, _ = strings.Cut(out, "\n")
		switch {
		case line == "gtk-launch":
			pr.gtkLaunch = true
		case strings.HasPrefix(line, "bus="):
			bus = strings.TrimPrefix(line, "bus=")
		case strings.HasPrefix(line, "env:"):
			if k, v, ok := strings.Cut(strings.TrimPrefix(line, "env:"), "="); ok && envName.MatchString(k) {
				pr.env[k] = v
			}
		case strings.HasPrefix(line, "file="):
			file := strings.TrimPrefix(line, "file=")
			if pr.entry, err = parseDesktopEntry(file, []byte(out)); err != nil {
				return nil, invalid("desktop_file", fmt.Sprintf("%s: %v", file, err))
			}
			pr.standard = slices.ContainsFunc(appDirs, func(d string) bool {
				return strings.HasPrefix(file, d+"/") || strings.HasPrefix(d, "~/") && strings.Contains(file, d[1:]+"/")
			})
			out = ""
		}
	}
	if _, ok := pr.env["DBUS_SESSION_BUS_ADDRESS"]; !ok && bus != "" {
		pr.env["DBUS_SESSION_BUS_ADDRESS"] = bus
	}
	return pr, nil
}
