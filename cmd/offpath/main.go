// Command offpath is the operator's CLI: it creates, lists, suspends and
// re-keys tenants, prints who spent what in a month, and lists the model
// aliases. It talks to Table Storage directly — with a connection string
// (Azurite locally) or a table service URL and DefaultAzureCredential (the
// operator's Entra ID login, or a managed identity) — so it works when the
// API does not, and needs no admin key.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/tablestore"
)

const usageText = `offpath — tenants, usage, documents and models of an offpath deployment

Usage:
  offpath [-storage CONN | -table-url URL] [-models FILE] COMMAND [flags] [args]

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
  documents status TENANT/PATH [-json]
                               what became of a document of the queue path:
                               state, reason, version, deliveries, timings,
                               chunks, result and usage
  documents list TENANT [-state S] [-limit N] [-json]
                               a tenant's documents ("_unattributed": claim
                               checks and uploads that named no tenant)
  documents reprocess TENANT/PATH (-servicebus NS | -devhost URL) [-force]
                               re-enqueue a rejected or dead-lettered document
                               after a fix: the enqueue checks run again on
                               the blob as it is now
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
-table-url uses DefaultAzureCredential instead. Models: -models (default
models.json), or the document in $OFFPATH_MODELS.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "offpath:", err)
		}
		os.Exit(2)
	}
}

// cli is one invocation's environment.
type cli struct {
	getenv  func(string) string
	out     io.Writer
	now     func() time.Time
	storage string
	url     string
	models  string
	rand    io.Reader
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("offpath", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() { fmt.Fprint(stdout, usageText) }
	c := &cli{getenv: getenv, out: stdout, now: time.Now, rand: rand.Reader}
	fs.StringVar(&c.storage, "storage", "", "storage connection string")
	fs.StringVar(&c.url, "table-url", "", "table service URL (with DefaultAzureCredential)")
	fs.StringVar(&c.models, "models", "models.json", "model catalog file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return errors.New("no command")
	}
	switch cmd, rest := rest[0], rest[1:]; cmd {
	case "tenants":
		return c.tenants(ctx, rest)
	case "usage":
		return c.usage(ctx, rest)
	case "documents":
		return c.documents(ctx, rest)
	case "models":
		return c.listModels(rest)
	case "admin-key":
		return c.adminKey(rest)
	case "sizing":
		return c.sizing(rest)
	case "webhooks":
		return c.webhooks(ctx, rest)
	case "help", "-h", "--help":
		fs.Usage()
		return nil
	default:
		return fmt.Errorf("unknown command %q (try offpath help)", cmd)
	}
}

// stores connects to Table Storage.
func (c *cli) stores() (*tablestore.Tenants, *tablestore.Ledger, error) {
	svc, err := c.tableService()
	if err != nil {
		return nil, nil, err
	}
	return tablestore.NewTenants(svc, ""), tablestore.NewLedger(svc, tablestore.LedgerOptions{}), nil
}

// tableService is the Table Storage account: -storage, -table-url (with
// DefaultAzureCredential), or $OFFPATH_STORAGE / $AzureWebJobsStorage.
func (c *cli) tableService() (*aztables.ServiceClient, error) {
	conn := tablestore.Connection{ConnectionString: c.storage, ServiceURL: c.url}
	if conn.ConnectionString == "" && conn.ServiceURL == "" {
		conn.ConnectionString = c.getenv("OFFPATH_STORAGE")
		if conn.ConnectionString == "" {
			conn.ConnectionString = c.getenv("AzureWebJobsStorage")
		}
	}
	switch {
	case conn.ConnectionString == "" && conn.ServiceURL == "":
		return nil, errors.New("no storage: pass -storage CONNECTION-STRING or -table-url URL (or set OFFPATH_STORAGE)")
	case conn.ConnectionString == "":
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("Azure credential: %w", err)
		}
		conn.Credential = cred
	}
	return tablestore.NewServiceClient(conn)
}

// catalog reads the model catalog: $OFFPATH_MODELS, else the -models file.
func (c *cli) catalog() (*catalog.Catalog, error) {
	if doc := c.getenv("OFFPATH_MODELS"); doc != "" {
		cat, err := catalog.Parse([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("OFFPATH_MODELS:\n%w", err)
		}
		return cat, nil
	}
	b, err := os.ReadFile(c.models)
	if err != nil {
		return nil, fmt.Errorf("read the model catalog: %w", err)
	}
	cat, err := catalog.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s:\n%w", c.models, err)
	}
	return cat, nil
}

// parse parses flags that may come before or after positional arguments
// ("tenants create acme -budget 5" as well as "-budget 5 acme").
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// one returns the single positional argument, or an error naming it.
func one(args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("want exactly one %s, got %d arguments", what, len(args))
	}
	return args[0], nil
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
