package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/api/apiv1"
	"github.com/bureau/bureau/internal/config"
	"github.com/spf13/cobra"
)

// s3SecretEnv holds an S3 target's secret key for "backup-target add"
// (a flag's value would show in ps and the shell's history).
const s3SecretEnv = "BUREAU_S3_SECRET_KEY"

// backupTargetCmd is "bureau backup-target": where backups go (admin).
func backupTargetCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "backup-target", Aliases: []string{"backup-targets"},
		Short: "Where backups go: S3-compatible buckets or directories (admin)"}
	var dir, secretFile string
	var s3 apiv1.S3Credentials
	add := &cobra.Command{
		Use:   "add NAME (--dir PATH | --s3-endpoint HOST:PORT --s3-bucket B --s3-access-key K)",
		Short: "Add a backup target once bureau reached it",
		Long: `Add a backup target once bureau reached it: a directory on bureau's host
(--dir, a local disk or a mounted share) or a bucket of an S3-compatible
store (--s3-*). The S3 secret key is read from --s3-secret-key-file (- for
stdin) or the environment variable ` + s3SecretEnv + `, never from a flag's
value, which ps would show. Backups the target already holds, written with
this install's backup key, are listed at once.`,
		Args: cobra.ExactArgs(1),
	}
	add.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		req := apiv1.BackupTargetRequest{Name: args[0]}
		switch {
		case dir != "" && s3.Endpoint != "":
			return errors.New("--dir and --s3-endpoint: give one (a directory, or an S3-compatible store)")
		case dir != "":
			req.Kind, req.Dir = "dir", dir
		case s3.Endpoint != "":
			if s3.Bucket == "" || s3.AccessKey == "" {
				return errors.New("an S3 target needs --s3-bucket and --s3-access-key")
			}
			secret, err := s3Secret(secretFile, add.InOrStdin())
			if err != nil {
				return err
			}
			creds := s3
			creds.SecretKey = secret
			req.Kind, req.S3 = "s3", &creds
		default:
			return errors.New("give --dir PATH, or --s3-endpoint HOST:PORT with its bucket and keys")
		}
		var t apiv1.BackupTarget
		if err := c.do(ctx, "POST", "/api/v1/backup-targets", req, &t); err != nil {
			return err
		}
		return printJSONTo(add.OutOrStdout(), t)
	})
	f := add.Flags()
	f.StringVar(&dir, "dir", "", "an absolute directory on bureau's host (a local disk or a mounted share)")
	f.StringVar(&s3.Endpoint, "s3-endpoint", "", "the S3-compatible store's host:port (e.g. nas.lan:9000)")
	f.StringVar(&s3.Bucket, "s3-bucket", "", "the bucket (it must exist)")
	f.StringVar(&s3.Prefix, "s3-prefix", "", "a key prefix for bureau's objects")
	f.StringVar(&s3.Region, "s3-region", "", "the region to sign requests for (when the store wants one)")
	f.StringVar(&s3.AccessKey, "s3-access-key", "", "the access key")
	f.StringVar(&secretFile, "s3-secret-key-file", "", "a file holding the secret key (- for stdin; default: $"+s3SecretEnv+")")
	f.BoolVar(&s3.Insecure, "s3-insecure", false, "speak plain HTTP to the store (loopback or a private network)")

	list := &cobra.Command{Use: "list", Short: "List backup targets", Args: cobra.NoArgs}
	list.RunE = runWithClient(cfg, func(ctx context.Context, c *client, _ []string) error {
		var out struct{ Targets []apiv1.BackupTarget }
		if err := c.do(ctx, "GET", "/api/v1/backup-targets", nil, &out); err != nil {
			return err
		}
		return targetTable(list.OutOrStdout(), out.Targets)
	})
	rm := &cobra.Command{Use: "rm NAME", Aliases: []string{"remove", "delete"},
		Short: "Forget a backup target (its backups stay in it)", Args: cobra.ExactArgs(1)}
	rm.RunE = runWithClient(cfg, func(ctx context.Context, c *client, args []string) error {
		if err := c.do(ctx, "DELETE", "/api/v1/backup-targets/"+url.PathEscape(args[0]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(rm.OutOrStdout(), "backup target %s removed; its backups stay in it (adding it again lists them)\n", args[0])
		return nil
	})
	cmd.AddCommand(add, list, rm)
	return cmd
}

// s3Secret reads the secret key from file ("-": stdin), else from the
// environment.
func s3Secret(file string, stdin io.Reader) (string, error) {
	var secret string
	switch file {
	case "":
		secret = os.Getenv(s3SecretEnv)
		if secret == "" {
			return "", fmt.Errorf("the S3 secret key: give --s3-secret-key-file FILE or set %s (never a flag's value: ps shows those)", s3SecretEnv)
		}
	case "-":
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
		if err != nil {
			return "", err
		}
		secret = string(b)
	default:
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("the S3 secret key: %w", err)
		}
		secret = string(b)
	}
	if secret = strings.TrimSpace(secret); secret == "" {
		return "", errors.New("the S3 secret key is empty")
	}
	return secret, nil
}

// targetTable writes targets as a table: where each is, and who added it.
func targetTable(out io.Writer, ts []apiv1.BackupTarget) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tKIND\tLOCATION\tADDED\tBY")
	for _, t := range ts {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Kind, targetLocation(t),
			t.CreatedAt.Local().Format(time.DateTime), t.CreatedBy)
	}
	return w.Flush()
}

// targetLocation reads /srv/backups, or s3://bucket/prefix at host:port
// (region, plain HTTP, access key).
func targetLocation(t apiv1.BackupTarget) string {
	if t.S3 == nil {
		return t.Dir
	}
	s := fmt.Sprintf("s3://%s/%s at %s", t.S3.Bucket, t.S3.Prefix, t.S3.Endpoint)
	var notes []string
	if t.S3.Region != "" {
		notes = append(notes, t.S3.Region)
	}
	if t.S3.Insecure {
		notes = append(notes, "plain HTTP")
	}
	notes = append(notes, "key "+t.S3.AccessKey)
	return s + " (" + strings.Join(notes, ", ") + ")"
}
