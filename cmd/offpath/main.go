// Command offpath is the operator's CLI: it creates, lists, suspends and
// re-keys tenants, prints who spent what in a month, follows documents, and
// lists the model aliases. Most commands talk to Table Storage directly —
// with a connection string (Azurite locally) or a table service URL and
// DefaultAzureCredential (the operator's Entra ID login, or a managed
// identity) — so they work when the API does not, and need no admin key.
// The batches and documents commands call the REST API instead: batches
// with the tenant's API key, documents with a tenant's key or (for every
// tenant's statuses and reprocess) the admin key.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	builtin "github.com/offpath/offpath"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/tablestore"
)

const usageText = `offpath — tenants, usage, documents and models of an offpath deployment

Usage:
  offpath [-storage CONN | -table-url URL] [-models FILE] COMMAND [flags] [args]
  offpath --version
  offpath COMMAND -h           a command's arguments and flags

Commands:
  tenants create ID [-name NAME] [-aliases a,b] [-budget TOKENS] [-app-id GUID,...]
                               create a tenant; prints its API key, once
  tenants list [-json]         list tenants
  tenants suspend ID           refuse the tenant's requests (403)
  tenants activate ID          accept them again
  tenants rotate-key ID [-overlap 24h]
                               issue a new API key; the old ones keep working
                               for the overlap ("0s": stop them now)
  usage [-tenant ID] [-month YYYY-MM] [-csv | -json]
                               usage by path, alias and deployment, with
                               totals and estimated cost (all tenants without
                               -tenant; this month, UTC, without -month)
  documents status TENANT/PATH [-admin [-tenant _unattributed]]
                               what became of a document of the queue path:
                               state, reason, version, deliveries, timings,
                               chunks, result and usage
  documents list [-state S] [-limit N] [-cursor C] [-admin [-tenant T]]
                               documents and their statuses: the tenant's, or
                               with -admin every tenant's
  documents reprocess TENANT/PATH
                               put a dead-lettered document back on the queue
                               path (admin): its blob is written again from
                               the dead-lettered version
                               (documents: through the REST API like batches;
                               -admin and reprocess use the admin key, -key,
                               default $OFFPATH_ADMIN_KEY)
  batches submit -alias A (-input FILE.jsonl | -input-blob NAME) [-system-prompt S]
         [-max-tokens N] [-metadata k=v,...] [-idempotency-key K]
                               submit a batch job through the REST API
  batches list [-state S] [-limit N] [-cursor C]
                               the tenant's batch jobs
  batches get ID               a job: state, parts, Azure status, counts, deadline
  batches wait ID [-interval 10s] [-timeout D]
                               follow a job until harvested (a progress bar on
                               a terminal); exit 1 unless it completed
  batches results ID [-o FILE] the job's results as JSONL
  batches cancel ID            cancel a job
                               (batches: -url, default $OFFPATH_URL, else
                               ` + defaultAPIURL + `; -key, default $OFFPATH_API_KEY;
                               -function-key, default $OFFPATH_FUNCTION_KEY;
                               -json on every one)
  webhooks set TENANT URL      register the tenant's webhook (https); prints
                               its signing secret (whsec_…), once
  webhooks show TENANT         the tenant's webhook URL
  webhooks events TENANT [-json]
                               its events and every delivery attempt
  webhooks delete TENANT       remove the tenant's webhook
  models [-json]               the model aliases, their deployments and prices
  admin-key                    make an admin key for the REST API, and the
                               digest to set as OFFPATH_ADMIN_KEY_SHA256
  sizing -tokens-per-document N [-deployment D | -tpm T -rpm R]
         [-calls-per-document K] [-latency S] [-share F] [-pool aks|flex] [-write]
                               derive maxReplicaCount, KEDA messageCount,
                               maxConcurrentCalls and per-instance TPM/RPM from
                               the deployment's quota; -write puts them into
                               infra/k8s (aks) or infra/main.parameters.json (flex)

Storage: -storage (default $OFFPATH_STORAGE, else $AzureWebJobsStorage) is a
connection string ("UseDevelopmentStorage=true" for a local Azurite);
-table-url uses DefaultAzureCredential instead. Models: -models FILE, else
the document in $OFFPATH_MODELS, else the catalog built into the binary.

Exit status: 0 on success (and -h), 2 for a usage error, 1 when the command
fails; errors go to stderr.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err on stderr and maps it to the exit status: 0 for
// success and help, 2 for a usage error, 1 for a runtime failure.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "offpath:", err)
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}

// usageError is a command line the CLI cannot run: a wrong flag, a missing
// or extra argument, a value out of range.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// cli is one invocation's environment.
type cli struct {
	getenv  func(string) string
	out     io.Writer
	errOut  io.Writer
	now     func() time.Time
	storage string
	url     string
	models  string
	rand    io.Reader
	// synopses holds each command's arguments and summary, for its usage.
	synopses map[*flag.FlagSet][2]string
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c := &cli{getenv: getenv, out: stdout, errOut: stderr, now: time.Now, rand: rand.Reader, synopses: map[*flag.FlagSet][2]string{}}
	fs := flag.NewFlagSet("offpath", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.storage, "storage", "", "storage connection string")
	fs.StringVar(&c.url, "table-url", "", "table service URL (with DefaultAzureCredential)")
	fs.StringVar(&c.models, "models", "", "model catalog file (default: $OFFPATH_MODELS, else the catalog built in)")
	showVersion := fs.Bool("version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return err
		}
		fmt.Fprint(stderr, usageText)
		return usageError{err}
	}
	if *showVersion {
		fmt.Fprintln(stdout, version())
		return nil
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usageText)
		return usagef("no command")
	}
	switch cmd, rest := rest[0], rest[1:]; cmd {
	case "tenants":
		return c.tenants(ctx, rest)
	case "usage":
		return c.usage(ctx, rest)
	case "documents":
		return c.documents(ctx, rest)
	case "batches":
		return c.batches(ctx, rest)
	case "models":
		return c.listModels(rest)
	case "admin-key":
		return c.adminKey(rest)
	case "sizing":
		return c.sizing(rest)
	case "webhooks":
		return c.webhooks(ctx, rest)
	case "version":
		fmt.Fprintln(stdout, version())
		return nil
	case "help":
		fmt.Fprint(stdout, usageText)
		return nil
	default:
		return usagef("unknown command %q (try offpath -h)", cmd)
	}
}

// version is the module version and VCS revision the binary was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "offpath (unknown version)"
	}
	v := "offpath " + bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.time":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += " (modified)"
			}
		}
	}
	return v + " " + bi.GoVersion
}

// group dispatches a command with subcommands ("tenants create"): help on
// -h, a usage error naming the subcommands otherwise.
func (c *cli) group(name string, args []string, subs map[string]func([]string) error, order string) error {
	if len(args) == 0 {
		return usagef("%s: want a subcommand: %s", name, order)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(c.out, "Usage: offpath %s COMMAND [flags] [args]\n\nCommands: %s\n(offpath %s COMMAND -h describes one)\n", name, order, name)
		return flag.ErrHelp
	}
	sub, ok := subs[args[0]]
	if !ok {
		return usagef("%s: unknown command %q (want %s)", name, args[0], order)
	}
	return sub(args[1:])
}

// flags makes a command's flag set; args and about go into its usage.
func (c *cli) flags(name, args, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	c.synopses[fs] = [2]string{args, about}
	return fs
}

// printUsage writes a command's usage: its arguments, summary and flags.
func (c *cli) printUsage(w io.Writer, fs *flag.FlagSet) {
	syn := c.synopses[fs]
	line := "offpath " + fs.Name()
	if syn[0] != "" {
		line += " " + syn[0]
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", line, syn[1])
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// stores connects to the tenants and the ledger.
func (c *cli) stores() (*tablestore.Tenants, *tablestore.Ledger, error) {
	conn, err := c.connection()
	if err != nil {
		return nil, nil, err
	}
	svc, err := tablestore.NewServiceClient(conn)
	if err != nil {
		return nil, nil, err
	}
	return tablestore.NewTenants(svc, ""), tablestore.NewLedger(svc, tablestore.LedgerOptions{}), nil
}

// catalog reads the model catalog: the -models file, else $OFFPATH_MODELS,
// else the catalog built into the binary.
func (c *cli) catalog() (*catalog.Catalog, error) {
	doc, source := builtin.Models, "the built-in models.json"
	switch {
	case c.models != "":
		b, err := os.ReadFile(c.models)
		if err != nil {
			return nil, fmt.Errorf("read the model catalog: %w", err)
		}
		doc, source = b, c.models
	case c.getenv("OFFPATH_MODELS") != "":
		doc, source = []byte(c.getenv("OFFPATH_MODELS")), "OFFPATH_MODELS"
	}
	cat, err := catalog.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("%s:\n%w", source, err)
	}
	return cat, nil
}

// parse parses flags that may come before or after positional arguments
// ("tenants create acme -budget 5" as well as "-budget 5 acme"). On -h it
// prints the command's usage to stdout and returns flag.ErrHelp; on a bad
// flag, the usage to stderr and a usage error.
func (c *cli) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printUsage(c.out, fs)
				return nil, err
			}
			c.printUsage(c.errOut, fs)
			return nil, usageError{fmt.Errorf("%s: %w", fs.Name(), err)}
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// one returns the single positional argument, or a usage error naming it.
func one(fs *flag.FlagSet, args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", usagef("%s: want exactly one %s, got %d arguments", fs.Name(), what, len(args))
	}
	return args[0], nil
}

// none refuses positional arguments.
func none(fs *flag.FlagSet, args []string, hint string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments%s (got %q)", fs.Name(), hint, args[0])
	}
	return nil
}

// printJSON writes v indented.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
