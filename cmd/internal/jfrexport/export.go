// Package jfrexport is the command line of `jvmkit jfr export`, in a package of its own so that only
// the jvmkit binary links the Parquet library (jfr/parquet), not the tests of package jvmkit's tree.
package jfrexport

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/cmd/internal/jvmkit"
	"github.com/jvmkit/jvmkit/jfr/parquet"
)

// Command is a `jfr` command with the `export` subcommand, for jvmkit.Main, which merges it into
// jvmkit jfr.
func Command(stdout, stderr io.Writer) *cobra.Command {
	var format, dir string
	export := &cobra.Command{
		Use:   "export FILE --format parquet -o DIR",
		Short: "Write a recording as tables, one file per event type (Parquet, for DuckDB)",
		Long: `export writes one table per event type of the recording into DIR (created if missing):
DIR/jdk.ExecutionSample.parquet and so on, with a typed column per field (times as timestamps,
timespans in nanoseconds, unsigned numbers unsigned), constants as structs with their fields (a class
or method as its Java name) and stack traces as lists of frames. For example, with DuckDB:

  SELECT count(*), sampledThread.javaName FROM 'dir/jdk.ExecutionSample.parquet' GROUP BY 2;

Each file is written under a temporary name and renamed into place when complete; the paths written
are printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "parquet" {
				return cliutil.UsageErrorf("--format %q: this jvmkit writes parquet", format)
			}
			if dir == "" {
				return cliutil.UsageErrorf("-o DIR is required")
			}
			r, damage, err := jvmkit.OpenRecording(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			files, err := parquet.Export(r, dir)
			for _, f := range files {
				fmt.Fprintln(stdout, f)
			}
			if err != nil {
				if damage != nil {
					return damage
				}
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return damage
		},
	}
	export.Flags().StringVar(&format, "format", "parquet", "output format")
	export.Flags().StringVarP(&dir, "output", "o", "", "output directory")
	root := &cobra.Command{Use: "jfr"}
	root.AddCommand(export)
	return root
}
