// Command bureau serves persistent Linux desktops for agents and people
// (bureau serve) and drives them from the shell (bureau desktop …).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

var version = "dev"

func main() {
	if err := rootCmd().Execute(); err != nil {
		// A remote command's exit status is passed on silently.
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(min(int(code), 255))
		}
		fmt.Fprintln(os.Stderr, "bureau:", err)
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	cfg := config.FromEnv()
	root := &cobra.Command{
		Use:           "bureau",
		Short:         "Persistent Linux desktops for AI agents",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	f := root.PersistentFlags()
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "data directory (BUREAU_DATA_DIR)")
	f.StringVar(&cfg.DatabaseURL, "database", cfg.DatabaseURL, "postgres:// URL or SQLite path (BUREAU_DATABASE_URL; default <data-dir>/bureau.db)")
	f.StringVar(&cfg.URL, "url", cfg.URL, "server URL for client commands (BUREAU_URL)")
	f.StringVar(&cfg.Token, "token", cfg.Token, "API token for client commands (BUREAU_TOKEN; default: the host's admin token file)")
	root.AddCommand(serveCmd(&cfg), doctorCmd(&cfg), migrateCmd(&cfg), imageCmd(&cfg), tokenCmd(&cfg), desktopCmd(&cfg), quotaCmd(&cfg), templateCmd(&cfg), hostCmd(&cfg), mcpCmd(&cfg), serviceCmd(&cfg), secretCmd(&cfg), urlCmd(&cfg), stepsCmd(&cfg), recordingCmd(&cfg),
		backupCmd(&cfg), backupTargetCmd(&cfg), requestsCmd(&cfg), requestCmd(&cfg), webhookCmd(&cfg), auditCmd(&cfg), teamCmd(&cfg))
	return root
}
