//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/bureau/bureau/internal/api/apiv1"
)

// runningCheck is a feature test run on the shared running desktop. It gets
// a server bound to its own subtest, the owner's token and the desktop, and
// must leave the desktop running for the checks after it.
type runningCheck struct {
	name string
	fn   func(t *testing.T, s *server, token string, d *apiv1.Desktop)
}

// runningChecks are the feature checks TestDesktopLifecycle runs, one
// subtest each (TestDesktopLifecycle/<name>), on its one running desktop,
// in this order. Each check stays in its feature file; this list alone
// says which run and when.
//
// The order matters: the checks share one desktop, and each finds it as
// the checks before it left it.
//   - bureau_agent leaves a web server running in the background
//     (agentPort); pause_and_hibernate checks it still serves after the
//     desktop hibernated and resumed. Nothing between the two may reboot
//     the guest or roll it back: the checks that do (resize_clone_reimage
//     reimages it, snapshots and step_log revert it) come after.
//   - snapshots expects to list exactly the two snapshots it takes: the
//     checks before it delete what they make (mcp_typescript its
//     snapshot; the reimage drops resize_clone_reimage's).
//   - resize_clone_reimage and snapshots wait until the desktop is ready after
//     the boot they cause, so the checks after them find it up.
//   - services leaves its service behind (serviceCreated); the lifecycle
//     test checks it is back after the stop/start that follows this list.
//
// The names are also referenced by e2e/skips.allowed and the Makefile's
// -run patterns; renaming one means renaming it there too
// (TestRunningChecksTable checks that).
var runningChecks = []runningCheck{
	{"bureau_agent", testBureauAgent},                // agent_test.go
	{"computer_use", testComputerUse},                // computer_test.go
	{"exec_files_clipboard", testExecFilesClipboard}, // computer_test.go
	{"mcp", testMCP},                                 // computer_test.go
	{"windows_ui", testWindowsUI},                    // windows_test.go, ui_test.go
	{"concurrency", testConcurrency},                 // concurrency_test.go
	{"console", testConsole},                         // console_test.go
	{"people", testPeople},                           // people_test.go
	{"webhooks", testWebhooks},                       // webhooks_test.go
	{"audit", testAudit},                             // audit_test.go
	{"behind_proxy", testBehindProxy},                // proxy_test.go
	{"live_framebuffer", testLiveFramebuffer},        // framebuffer_test.go
	{"isolation", testIsolation},                     // isolation_test.go
	{"mcp_typescript", testMCPTypeScript},            // mcp_ts_test.go
	{"observability", testObservability},             // observability_test.go
	{"pause_and_hibernate", testPauseHibernate},      // persistence_test.go
	{"recordings", testRecordings},                   // recordings_test.go
	{"resize_clone_reimage", testResizeCloneReimage}, // reimage_test.go
	{"sdk_python", testSDKPython},                    // sdk_python_test.go
	{"sdk_typescript", testSDKTypeScript},            // sdk_typescript_test.go
	{"services", testServices},                       // services_test.go
	{"snapshots", testSnapshots},                     // snapshots_test.go
	{"step_log", testStepLog},                        // steps_test.go
	{"live_urls", testLiveURLs},                      // urls_test.go
	{"benchmarks", testBenchmarks},                   // bench_test.go
}

// TestRunningChecksTable checks the list of running checks against the
// names that refer to its checks elsewhere, so that a rename cannot
// silently skip a check or stop skipping one. It starts no server and
// boots nothing.
func TestRunningChecksTable(t *testing.T) {
	// A name t.Run keeps as it is (it would rewrite spaces, say), so that
	// TestDesktopLifecycle/<name> is the subtest's name.
	valid := regexp.MustCompile(`^[a-z0-9_]+$`)
	in := map[string]bool{}
	for i, c := range runningChecks {
		if !valid.MatchString(c.name) || c.fn == nil {
			t.Errorf("running check %d: name %q (want [a-z0-9_]+), function set %t", i, c.name, c.fn != nil)
		}
		if in[c.name] {
			t.Errorf("running check %q listed twice", c.name)
		}
		in[c.name] = true
	}
	// TestDesktopLifecycle/<name> in the allowed skips and in the
	// Makefile's -run patterns (TestDesktopLifecycle$$/<name>); the
	// lifecycle's own subtests are names too.
	for _, own := range lifecycleSubtests {
		in[own] = true
	}
	ref := regexp.MustCompile(`TestDesktopLifecycle\$*/([A-Za-z0-9_]+)`)
	for _, f := range []string{"skips.allowed", filepath.Join("..", "Makefile")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			if !in[m[1]] {
				t.Errorf("%s names %s, which is no running check", f, m[0])
			}
		}
	}
}
