package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/job"
)

// usageError marks an error the user caused with flags, arguments or config:
// refused, nothing touched (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string        { return e.err.Error() }
func (e usageError) Unwrap() error        { return e.err }
func (e usageError) Is(target error) bool { return target == job.ErrRefused }

func usageErr(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode prints a command's error and maps it to its exit code
// (job.ExitCode, the one place that decides).
func exitCode(err error) int {
	if err == nil {
		return job.ExitOK
	}
	// The one place errors are printed passes the one redaction step: an
	// error may quote a peer that echoed a secret back.
	fmt.Fprintln(os.Stderr, "tally: "+secret.Redact(err.Error()))
	return job.ExitCode(err)
}

type globalFlags struct {
	logFormat string
	logLevel  string
}

// run executes the command line. An error raised before any command starts
// (unknown command or flag, wrong arguments) is bad usage: exit 2.
func run(ctx context.Context) error {
	return execute(ctx, func(root *cobra.Command) { root.SetArgs(sqlArgsLast(root, os.Args[1:])) })
}

// sqlArgsLast lets the SQL of tally query begin with a "--" comment: the
// flag parser would take such an argument for an unknown flag. An
// argument that starts with "--" and has white space in what would be the
// flag's name is no flag; it goes after a "--", which ends the flags, as
// the query's one argument. A flag's value ("--reason", "-- late charge")
// is left where it is.
func sqlArgsLast(root *cobra.Command, args []string) []string {
	noValue := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if f.NoOptDefVal != "" {
					noValue[f.Name], noValue[f.Shorthand] = true, true
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	// cobra adds --help and --version only as the command runs.
	noValue["h"], noValue["help"], noValue["version"] = true, true, true
	var sql []string
	out := make([]string, 0, len(args)+2)
	valueNext := false
	for i, a := range args {
		switch {
		case a == "--":
			out = append(out, args[i:]...)
			if len(sql) == 0 {
				return out
			}
			return append(out, sql...)
		case valueNext:
			valueNext = false
			out = append(out, a)
		case strings.HasPrefix(a, "--") && strings.ContainsAny(strings.SplitN(a[2:], "=", 2)[0], " \t\r\n"):
			sql = append(sql, a)
		case strings.HasPrefix(a, "-") && a != "-":
			// A value given with "=" is in the argument; bool flags
			// take none.
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			valueNext = !hasValue && !noValue[name]
			out = append(out, a)
		default:
			out = append(out, a)
		}
	}
	if len(sql) == 0 {
		return out
	}
	return append(append(out, "--"), sql...)
}

// execute builds the command tree, lets setup (if any) point it at other
// arguments and streams, as tests do, and runs it. An error before any
// command started is a usage error (exit 2).
func execute(ctx context.Context, setup func(*cobra.Command)) error {
	started := false
	root := newRootCmd(&started)
	if setup != nil {
		setup(root)
	}
	err := root.ExecuteContext(ctx)
	if err != nil && !started {
		var ue usageError
		if !errors.As(err, &ue) {
			err = usageError{err}
		}
	}
	return err
}

func newRootCmd(started *bool) *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "tally",
		Short:         "Turn a media cloud's usage interface into numbers finance signs off",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			*started = true
			_, err := newLogger(g, io.Discard)
			return err
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "auto", "log format: auto, console or json")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(newVersionCmd())
	// --version prints what `tally version` does; cobra evaluates the
	// template only when the flag is given, so no command pays for
	// opening DuckDB to learn its version.
	root.Version = version
	cobra.AddTemplateFunc("tallyVersion", versionText)
	root.SetVersionTemplate(`{{tallyVersion}}`)
	for _, add := range commands {
		root.AddCommand(add(g))
	}
	return root
}

// commands holds the constructors of the commands beyond version; each
// command file registers its own in init, so adding a command touches one
// file.
var commands []func(*globalFlags) *cobra.Command

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Tally's version, commit and DuckDB version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), versionText())
			return err
		},
	}
}

// isTerminal reports whether f is a character device (a person is watching).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newLogger builds the zerolog logger the flags ask for: console output on a
// terminal, JSON lines otherwise (cron, systemd, Kubernetes).
func newLogger(g *globalFlags, w io.Writer) (zerolog.Logger, error) {
	out := w
	level, err := zerolog.ParseLevel(g.logLevel)
	if err != nil || g.logLevel == "" || level > zerolog.ErrorLevel || level < zerolog.DebugLevel {
		return zerolog.Nop(), usageErr("--log-level %q is not one of debug, info, warn, error", g.logLevel)
	}
	format := g.logFormat
	switch format {
	case "auto":
		format = "json"
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			format = "console"
		}
	case "console", "json":
	default:
		return zerolog.Nop(), usageErr("--log-format %q is not one of auto, console, json", g.logFormat)
	}
	// Every log line passes the one redaction step, whatever logged it.
	w = secret.Writer(w)
	if format == "console" {
		// Colours only for a person at a terminal: escape codes in a
		// file or a pipe are noise.
		f, tty := out.(*os.File)
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !tty || !isTerminal(f)}
	}
	// Durations carry their unit ("delay=1.5s", "delay":"1.5s"), never a
	// bare count of milliseconds a reader has to guess.
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
	log := zerolog.New(w).Level(level).With().Timestamp().Logger()
	// Libraries that log through log/slog log through this logger: in its format, at its level, redacted; not as
	// plain text on stderr beside it.
	slog.SetDefault(slog.New(zerolog.NewSlogHandler(log)))
	return log, nil
}
