package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/bureau/bureau/internal/config"
	"github.com/bureau/bureau/internal/images"
	"github.com/bureau/bureau/internal/store"
	"github.com/spf13/cobra"
)

// Image commands work on this host's data directory and database directly
// (they run as root next to libvirtd).
func imageCmd(cfg *config.Config) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Build, import, list and delete base images"}
	var name, recipe, osName, osVersion string
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the default desktop image from its recipe (reused when the recipe is unchanged)",
		RunE: withStore(cfg, func(ctx context.Context, st *store.Store, log *slog.Logger, _ []string) error {
			start := time.Now()
			progress := newProgressPrinter(os.Stderr)
			im, reused, err := imageService(cfg, st, log).Build(ctx,
				images.BuildRequest{Name: name, RecipeDir: recipe, OS: osName, Version: osVersion}, progress.report)
			progress.finish()
			var kept *images.RebuildInUseError
			if errors.As(err, &kept) {
				// Not a failure: the image its desktops run over stays,
				// and bureau serves with it (make run goes on).
				fmt.Fprintf(os.Stderr, "warning: %v\n", err)
				return nil
			}
			if err != nil {
				return err
			}
			how := "built"
			if reused {
				how = "reused (recipe unchanged)"
			}
			fmt.Printf("image %s %s in %s: %s, %d MiB, sha256 %s, recipe %s\n", im.Name, how,
				time.Since(start).Round(time.Second), im.Path, im.SizeBytes>>20, im.SHA256[:16], im.RecipeHash)
			return nil
		}),
	}
	build.Flags().StringVar(&name, "name", cfg.DefaultImage, "image name")
	build.Flags().StringVar(&recipe, "recipe", cfg.RecipeDir, "recipe folder holding build.sh (BUREAU_RECIPE_DIR)")
	build.Flags().StringVar(&osName, "os", "debian", "operating system recorded for the image")
	build.Flags().StringVar(&osVersion, "os-version", "12", "OS version recorded for the image")

	var req images.ImportRequest
	imp := &cobra.Command{
		Use:   "import",
		Short: "Import a disk image by --url (resumable download) or --path",
		RunE: withStore(cfg, func(ctx context.Context, st *store.Store, log *slog.Logger, _ []string) error {
			progress := newProgressPrinter(os.Stderr)
			im, err := imageService(cfg, st, log).Import(ctx, req, progress.report)
			progress.finish()
			if err != nil {
				return err
			}
			fmt.Printf("image %s imported: %s, %d MiB, sha256 %s\n", im.Name, im.Path, im.SizeBytes>>20, im.SHA256[:16])
			return nil
		}),
	}
	imp.Flags().StringVar(&req.Name, "name", "", "image name (required)")
	imp.Flags().StringVar(&req.URL, "url", "", "http(s) URL to download")
	imp.Flags().StringVar(&req.Path, "path", "", "local file to import")
	imp.Flags().StringVar(&req.SHA256, "sha256", "", "expected SHA-256 of the file")
	imp.Flags().StringVar(&req.OS, "os", "", "operating system, e.g. ubuntu")
	imp.Flags().StringVar(&req.Version, "os-version", "", "OS version, e.g. 22.04")

	list := &cobra.Command{
		Use:   "list",
		Short: "List registered images",
		RunE: withStore(cfg, func(ctx context.Context, st *store.Store, log *slog.Logger, _ []string) error {
			ims, err := imageService(cfg, st, log).List(ctx)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tOS\tSIZE\tCREATED\tSOURCE")
			for _, im := range ims {
				fmt.Fprintf(w, "%s\t%s %s\t%d MiB\t%s\t%s\n", im.Name, im.OS, im.Version, im.SizeBytes>>20, im.CreatedAt.Format(time.RFC3339), im.Source)
			}
			return w.Flush()
		}),
	}
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an image no desktop uses",
		Args:  cobra.ExactArgs(1),
		RunE: withStore(cfg, func(ctx context.Context, st *store.Store, log *slog.Logger, args []string) error {
			if err := imageService(cfg, st, log).Delete(ctx, args[0]); err != nil {
				return err
			}
			fmt.Printf("image %s deleted\n", args[0])
			return nil
		}),
	}
	cmd.AddCommand(build, imp, list, del)
	return cmd
}
