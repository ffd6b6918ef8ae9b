package apptest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

// Keys the dev host expects: the function key for /api/ routes and the
// master key for /admin/ routes.
const (
	FunctionKey = "apptest-function-key"
	MasterKey   = "apptest-master-key"
)

// Config says how to run the app. The zero value runs it with the
// simulator's default deployments and the two default tenants.
type Config struct {
	// Sim configures the Azure OpenAI simulator. No deployments means
	// aoaisim.DefaultDeployments(); a nil Speed, the simulator's default.
	Sim aoaisim.Config
	// Settings override the app settings (local.settings.json's Values).
	// The defaults point the app at this stack's Azurite, simulator (over
	// TLS, trusted through SSL_CERT_FILE; also as Azure Monitor,
	// OFFPATH_MONITOR_ENDPOINT, and as App Service's managed identity
	// endpoint, IDENTITY_ENDPOINT and IDENTITY_HEADER) and alert sink and
	// speed the batch path up: OFFPATH_LOG_LEVEL warn,
	// OFFPATH_BATCH_POLL_SCHEDULE every second, OFFPATH_BATCH_POLL_INTERVAL
	// 50ms, OFFPATH_BATCH_BACKOFF_BASE 500ms, an admin key
	// (OFFPATH_ADMIN_KEY_SHA256) and the dev host's keys. A %SETTING% that a
	// function.json references and neither sets gets NeverSchedule for a
	// timer's schedule, or its name in lower case with hyphens.
	Settings map[string]string
	// Tenants maps each tenant to seed to the model aliases it may use. Nil
	// means contoso and fabrikam, both with "summarize".
	Tenants map[string][]string
	// Functions replace the function.json of the named functions (say, a
	// blob trigger without supportsDeferredBinding).
	Functions map[string]string
	// ServiceBus configures the Service Bus stand-in (lock duration, max
	// delivery count); the zero value is Azure's defaults.
	ServiceBus sbemu.Options
	// HostJSON, when set, rewrites the repository's host.json for this
	// stack (say, a shorter functionTimeout).
	HostJSON func([]byte) []byte
	// Unchecked leaves the API's exchanges unchecked: URL is the dev host
	// itself, for a test that measures it or probes the host's own
	// behaviour (streaming, slow clients).
	Unchecked bool
}

// Stack is the whole app running behind a dev host. Its fields are for
// inspection; the test owns nothing in it and stops nothing: Start's
// cleanups do.
type Stack struct {
	// URL is the app's base URL (http://127.0.0.1:port): a proxy to the
	// dev host that checks every exchange under /api/v1/ and /api/openai/
	// against the API's OpenAPI document (package openapitest) and fails
	// the test on a mismatch, or with Config.Unchecked the dev host itself.
	URL string
	// HostURL is the dev host's own base URL.
	HostURL string
	// Keys are the tenants' API keys, by tenant id; AdminKey is the admin
	// API's key.
	Keys     map[string]string
	AdminKey string
	// Settings are the app settings the handler runs with.
	Settings map[string]string
	// AppDir is the app folder (host.json, function folders, settings).
	AppDir string

	// Sim is the simulator, at SimURL (https); SimClient trusts its
	// certificate, for a test that calls it directly.
	Sim       *aoaisim.Server
	SimURL    string
	SimClient *http.Client
	// Azurite is the stack's private storage emulator; Blobs and Tables
	// are clients of it.
	Azurite *azurite.Azurite
	Blobs   *azblob.Client
	Tables  *aztables.ServiceClient
	// Jobs, Ledger and Tenants are the handler's tables (default names).
	Jobs    *tablestore.Jobs
	Ledger  *tablestore.Ledger
	Tenants *tablestore.Tenants
	// Catalog is the app's models.json.
	Catalog *catalog.Catalog
	// Host is the dev host running the app: its events say what it did
	// (Wait); Broker is its Service Bus stand-in.
	Host   *devhost.Host
	Broker *sbemu.Broker

	tb      testing.TB
	root    string // the repository
	handler string // the handler binary in AppDir
	alerts  *sink
	traces  *traces
	out     *output
}

// output collects what the handler and the dev host print.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// Output returns what the handler printed (its own log lines) and the dev
// host's log, which carries each invocation's Logs, so far.
func (s *Stack) Output() string {
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	return s.out.buf.String()
}

// Start runs the app for the test and stops it when the test ends. It fails
// the test if any part does not start.
func Start(tb testing.TB, cfg Config) *Stack {
	tb.Helper()
	bin := handlerBinary(tb)
	root, err := repoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	az := azurite.Start(tb)

	simCfg := cfg.Sim
	if len(simCfg.Deployments) == 0 {
		simCfg.Deployments = aoaisim.DefaultDeployments()
	}
	sim, err := aoaisim.New(simCfg, zerolog.Nop())
	if err != nil {
		tb.Fatalf("aoaisim.New: %v", err)
	}
	// Over TLS, as Azure serves: the handler trusts the simulator's
	// certificate through SSL_CERT_FILE, which Go reads on Linux.
	simURL, certPEM, err := sim.StartTLS("127.0.0.1:0")
	if err != nil {
		tb.Fatalf("start the simulator: %v", err)
	}
	tb.Cleanup(func() { _ = sim.Close() })
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	certFile := filepath.Join(tb.TempDir(), "aoaisim.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		tb.Fatal(err)
	}

	s := &Stack{Keys: map[string]string{}, AppDir: tb.TempDir(), Sim: sim, SimURL: simURL, Azurite: az,
		SimClient: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}, tb: tb, root: root, alerts: newSink(tb), traces: newTraces(), out: &output{}}
	s.handler = filepath.Join(s.AppDir, "handler")
	adminKey, adminDigest, err := auth.NewAdminKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	s.AdminKey = adminKey
	settings := map[string]string{
		"FUNCTIONS_WORKER_RUNTIME": "custom",
		"AzureWebJobsStorage":      az.ConnectionString(),
		"OFFPATH_AOAI_ENDPOINT":    simURL,
		"OFFPATH_AOAI_API_KEY":     aoaisim.DefaultKey,
		"SSL_CERT_FILE":            certFile,
		"OFFPATH_MONITOR_ENDPOINT": simURL,
		// App Service's managed identity endpoint, played by the simulator.
		"IDENTITY_ENDPOINT":           simURL + aoaisim.IdentityPath,
		"IDENTITY_HEADER":             cmp.Or(simCfg.IdentityHeader, aoaisim.DefaultIdentityHeader),
		"OFFPATH_LOG_LEVEL":           "warn",
		"OFFPATH_BATCH_POLL_SCHEDULE": "*/1 * * * * *",
		"OFFPATH_BATCH_POLL_INTERVAL": "50ms",
		"OFFPATH_BATCH_BACKOFF_BASE":  "500ms",
		"OFFPATH_ADMIN_KEY_SHA256":    adminDigest,
		"OFFPATH_ALERT_WEBHOOK_URL":   s.alerts.url(),
		"DEVHOST_FUNCTION_KEY":        FunctionKey,
		"DEVHOST_MASTER_KEY":          MasterKey,
	}
	for k, v := range cfg.Settings {
		settings[k] = v
	}
	if s.Settings, err = writeApp(root, s.AppDir, settings, cfg.Functions); err != nil {
		tb.Fatal(err)
	}
	if cfg.HostJSON != nil {
		path := filepath.Join(s.AppDir, "host.json")
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, cfg.HostJSON(b), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	ls, err := json.Marshal(map[string]any{"IsEncrypted": false, "Values": s.Settings})
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.AppDir, "local.settings.json"), ls, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := linkOrCopy(bin, s.handler); err != nil {
		tb.Fatal(err)
	}
	models, err := os.ReadFile(filepath.Join(s.AppDir, "models.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if s.Catalog, err = catalog.Parse(models); err != nil {
		tb.Fatalf("models.json: %v", err)
	}

	if s.Tables, err = tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()}); err != nil {
		tb.Fatal(err)
	}
	s.Jobs = tablestore.NewJobs(s.Tables, "", nil)
	s.Ledger = tablestore.NewLedger(s.Tables, tablestore.LedgerOptions{})
	s.Tenants = tablestore.NewTenants(s.Tables, "")
	s.seedTenants(cfg.Tenants)

	if s.Blobs, err = azblob.NewClientFromConnectionString(az.ConnectionString(), nil); err != nil {
		tb.Fatal(err)
	}
	s.startHost(cfg)
	return s
}

// seedTenants creates the tenants with API keys.
func (s *Stack) seedTenants(tenants map[string][]string) {
	s.tb.Helper()
	if tenants == nil {
		tenants = map[string][]string{"contoso": {"summarize"}, "fabrikam": {"summarize"}}
	}
	for id, aliases := range tenants {
		tn := tenant.New(id, id, time.Now())
		tn.Aliases = aliases
		key, _, err := tn.RotateKey(rand.Reader, time.Now(), 0)
		if err != nil {
			s.tb.Fatal(err)
		}
		if err := s.Tenants.Create(context.Background(), tn); err != nil {
			s.tb.Fatalf("seed tenant %s: %v", id, err)
		}
		s.Keys[id] = key
	}
}

// startHost runs the dev host on the app folder until the test ends.
func (s *Stack) startHost(cfg Config) {
	tb := s.tb
	tb.Helper()
	app, err := devhost.LoadApp(s.AppDir, func(string) string { return "" })
	if err != nil {
		tb.Fatalf("devhost.LoadApp: %v", err)
	}
	// The handler's log reaches the test log as it is written only with
	// -v; otherwise a failed test ends with the last lines of it and of the
	// dev host's (after the host has stopped: cleanups run last first).
	handlerOut := io.Writer(s.out)
	if testing.Verbose() {
		handlerOut = io.MultiWriter(zerolog.NewTestWriter(tb), s.out)
	} else {
		tb.Cleanup(func() {
			if tb.Failed() {
				tb.Logf("the last lines of the handler's and the dev host's output (go test -v shows all of it as it comes):\n%s", lastLines(s.Output(), failureLines))
			}
		})
	}
	h, err := devhost.New(devhost.Options{App: app, Storage: s.Azurite.ConnectionString(), ServiceBus: cfg.ServiceBus, HTTPAddr: "127.0.0.1:0",
		BlobPollInterval: blobPoll, HandlerOutput: s.traces.handlerOutput(handlerOut)},
		zerolog.New(io.MultiWriter(s.traces.hostLog(), s.out)))
	if err != nil {
		tb.Fatalf("devhost.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			tb.Error("dev host did not stop")
		}
	})
	s.URL, s.HostURL, s.Host, s.Broker = h.URL(), h.URL(), h, h.Broker()
	if !cfg.Unchecked {
		s.URL = checkedProxy(tb, h.URL())
	}
}

// failureLines is how much of the app's output a failed test shows.
const failureLines = 100

// lastLines returns the last n lines of text.
func lastLines(text string, n int) string {
	text = strings.TrimRight(text, "\n")
	for i := len(text) - 1; i >= 0; i-- {
		if text[i] == '\n' {
			if n--; n == 0 {
				return text[i+1:]
			}
		}
	}
	return text
}

// blobPoll is the stack's pause between blob container scans, short so
// that a dropped blob is picked up at once.
const blobPoll = 100 * time.Millisecond

// eventWait bounds Wait.
const eventWait = 60 * time.Second

// Wait returns the first dev host event, past or future, that match
// accepts, and fails the test if none comes within a minute.
func (s *Stack) Wait(what string, match func(devhost.Event) bool) devhost.Event {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	e, err := s.Host.Wait(ctx, match)
	if err != nil {
		s.tb.Fatalf("%s: %v", what, err)
	}
	return e
}

// linkOrCopy puts the handler binary at dst: a hard link where it can, a
// copy across file systems.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
