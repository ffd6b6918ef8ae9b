package ingest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/docblob"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/offpath/offpath/internal/tokenmetrics"
)

// The end-to-end tests run the real handler binary with the repository's
// host.json, models.json and ingest function folders, under the dev host,
// against a private Azurite and an in-process simulator: a document is
// uploaded to incoming/ and followed through the blob trigger, Service Bus
// (the dev host's stand-in, with DeliveryCount and dead-lettering) and the
// process function to ingested/, the ledger and its status.

// build is one binary of the repository, built once per test binary.
type build struct {
	once sync.Once
	path string
	err  error
}

var handlerBuild, cliBuild build

func (b *build) get(t *testing.T, pkg string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "ingest-e2e-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// handlerBinary is ./cmd/handler; cliBinary the operator CLI.
func handlerBinary(t *testing.T) string { return handlerBuild.get(t, "./cmd/handler") }
func cliBinary(t *testing.T) string     { return cliBuild.get(t, "./cmd/offpath") }

// offpath runs an operator CLI command against the stack's API, as the
// operator (the admin key). Flags after the command's arguments are its own.
func (s *stack) offpath(args ...string) (string, error) {
	s.t.Helper()
	cmd := exec.Command(cliBinary(s.t), append(args, "-url", s.host.URL(), "-function-key", "fkey", "-key", s.adminKey)...)
	cmd.Env = append(os.Environ(), "OFFPATH_API_KEY=", "OFFPATH_ADMIN_KEY=", "OFFPATH_URL=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

type stackOptions struct {
	sim             func(*aoaisim.Config)
	settings        map[string]string
	maxDelivery     int           // default 10
	functionTimeout string        // default "00:01:00"
	lockDuration    time.Duration // default 5 s
}

type stack struct {
	t       *testing.T
	az      *azurite.Azurite
	blobs   *azblob.Client
	broker  *sbemu.Broker
	sim     *aoaisim.Server
	tenants *tablestore.Tenants
	docs    *tablestore.Documents
	ledger  *tablestore.Ledger
	results *docblob.Store
	host    *devhost.Host
	appDir  string
	out     *syncFile
	// adminKey is the API's admin key.
	adminKey string
}

// syncFile collects the handler's output for a failing test.
type syncFile struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (f *syncFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}

func (f *syncFile) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	bin := handlerBinary(t)
	s := &stack{t: t, az: azurite.Start(t), out: &syncFile{}}
	ctx := context.Background()

	simCfg := aoaisim.Config{Deployments: testDeployments(16), DisableRateLimits: true}
	if o.sim != nil {
		o.sim(&simCfg)
	}
	sim, err := aoaisim.New(simCfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	simURL, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	s.sim = sim

	// The app folder: the repository's host.json (function timeout
	// shortened), models.json and ingest functions, and the handler.
	s.appDir = t.TempDir()
	host, err := os.ReadFile("../../host.json")
	if err != nil {
		t.Fatal(err)
	}
	timeout := o.functionTimeout
	if timeout == "" {
		timeout = "00:01:00"
	}
	host = regexp.MustCompile(`"functionTimeout":\s*"[^"]*"`).ReplaceAll(host, []byte(`"functionTimeout": "`+timeout+`"`))
	write(t, filepath.Join(s.appDir, "host.json"), host)
	models, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(s.appDir, "models.json"), models)
	for _, fn := range []string{"ingest-enqueue", "ingest-process", "ingest-process-heavy", "api"} {
		b, err := os.ReadFile(filepath.Join("../../functions", fn, "function.json"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(s.appDir, fn, "function.json"), b)
	}
	if err := os.Link(bin, filepath.Join(s.appDir, "handler")); err != nil {
		t.Fatal(err)
	}
	maxDelivery := o.maxDelivery
	if maxDelivery == 0 {
		maxDelivery = 10
	}
	adminKey, adminDigest, err := auth.NewAdminKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s.adminKey = adminKey
	values := map[string]string{
		// The handler knows the queue's MaxDeliveryCount, as the infra tells it.
		"OFFPATH_INGEST_MAX_DELIVERY_COUNT": strconv.Itoa(maxDelivery), "OFFPATH_ADMIN_KEY_SHA256": adminDigest,
		"FUNCTIONS_WORKER_RUNTIME": "custom", "AzureWebJobsStorage": s.az.ConnectionString(),
		"OFFPATH_AOAI_ENDPOINT": simURL, "OFFPATH_AOAI_API_KEY": aoaisim.DefaultKey,
		"OFFPATH_AOAI_BASE_BACKOFF": "20ms", "OFFPATH_AOAI_MAX_BACKOFF": "200ms",
		"OFFPATH_LOG_LEVEL": "info", "DEVHOST_FUNCTION_KEY": "fkey", "DEVHOST_MASTER_KEY": "mkey",
		"OFFPATH_TOKEN_METRICS_FILE": filepath.Join(s.appDir, "metrics.jsonl"),
	}
	for k, v := range o.settings {
		values[k] = v
	}
	settings, _ := json.Marshal(map[string]any{"IsEncrypted": false, "Values": values})
	write(t, filepath.Join(s.appDir, "local.settings.json"), settings)

	if s.blobs, err = azblob.NewClientFromConnectionString(s.az.ConnectionString(), nil); err != nil {
		t.Fatal(err)
	}
	queues, err := azqueue.NewServiceClientFromConnectionString(s.az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lock := o.lockDuration
	if lock == 0 {
		lock = 5 * time.Second
	}
	if s.broker, err = sbemu.New(queues, s.blobs, sbemu.Options{LockDuration: lock, MaxDeliveryCount: maxDelivery}); err != nil {
		t.Fatal(err)
	}
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: s.az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	s.tenants = tablestore.NewTenants(svc, "")
	s.docs = tablestore.NewDocuments(svc, "", nil)
	s.ledger = tablestore.NewLedger(svc, tablestore.LedgerOptions{})
	s.results = docblob.New(s.blobs, "incoming", "ingested", 0)
	for _, tn := range []struct {
		id    string
		state tenant.State
	}{{"acme", tenant.Active}, {"sleepy", tenant.Suspended}} {
		tt := tenant.New(tn.id, tn.id, time.Now())
		tt.Aliases, tt.State = []string{"ingest"}, tn.state
		if err := s.tenants.Create(ctx, tt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.blobs.CreateContainer(ctx, "incoming", nil); err != nil {
		t.Fatal(err)
	}

	app, err := devhost.LoadApp(s.appDir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s.host, err = devhost.New(devhost.Options{App: app, Blobs: s.blobs, Queues: queues, Broker: s.broker,
		HTTPAddr: "127.0.0.1:0", BlobPollInterval: 100 * time.Millisecond, HandlerOutput: s.out,
		HostID: "e2e" + strconv.FormatInt(time.Now().UnixNano(), 36)}, zerolog.New(s.out).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.host.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Error("the dev host did not stop")
		}
		if t.Failed() || testing.Verbose() && os.Getenv("E2E_LOGS") != "" {
			t.Logf("handler and dev host output:\n%s", tail(s.out.String(), 60))
		}
	})
	return s
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// upload drops a document into incoming/ and returns its ETag, or an
// error if the storage refused the name.
func (s *stack) upload(name string, data []byte, metadata map[string]string) (string, error) {
	md := map[string]*string{}
	for k, v := range metadata {
		md[k] = &v
	}
	res, err := s.blobs.UploadBuffer(context.Background(), "incoming", name, data, &azblob.UploadBufferOptions{Metadata: md})
	if err != nil {
		return "", err
	}
	return strings.Trim(string(*res.ETag), `"`), nil
}

func (s *stack) mustUpload(name string, data []byte) string {
	s.t.Helper()
	etag, err := s.upload(name, data, nil)
	if err != nil {
		s.t.Fatalf("upload %s: %v", name, err)
	}
	return etag
}

// final waits for the document's status to be final for version etag
// (any version when etag is empty).
func (s *stack) final(partition, name, etag string, timeout time.Duration) document.Status {
	s.t.Helper()
	var st document.Status
	poll.Until(s.t, timeout, "a final status of "+document.Printable(name), func() bool {
		var err error
		st, err = s.docs.Get(context.Background(), partition, name)
		return err == nil && st.State.Final() && (etag == "" || st.SameVersion(etag))
	})
	return st
}

// usage returns the tenant's ledger rows of this month for one document.
func (s *stack) usage(tenantID, name, etag string) []ledger.Entry {
	s.t.Helper()
	all, err := s.ledger.Month(context.Background(), tenantID, ledger.MonthOf(time.Now()))
	if err != nil {
		s.t.Fatal(err)
	}
	var out []ledger.Entry
	for _, e := range all {
		if strings.HasPrefix(e.Unit, "ingest:"+name+"@"+etag+"#") {
			out = append(out, e)
		}
	}
	return out
}

func (s *stack) result(name string) []resultLine {
	s.t.Helper()
	b, _, err := s.results.Read(context.Background(), name+".jsonl")
	if err != nil {
		s.t.Fatalf("result of %s: %v", name, err)
	}
	return readResult(s.t, b)
}

func (s *stack) deadLettered(queue string) int {
	s.t.Helper()
	_, dead, err := s.broker.Count(context.Background(), queue)
	if err != nil {
		s.t.Fatal(err)
	}
	return dead
}

// killHandler kills the handler process with SIGKILL, as a crash would:
// the dev host notices and starts another.
func (s *stack) killHandler() {
	s.t.Helper()
	exe := filepath.Join(s.appDir, "handler")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		s.t.Skip("needs /proc to find the handler")
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && target == exe {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				s.t.Fatal(err)
			}
			return
		}
	}
	s.t.Fatal("no handler process found")
}

// streamed sums the handler's token metrics stream per deployment (prompt,
// completion), as the shipped query sums Application Insights' copy.
func (s *stack) streamed(tenantID string) map[string][2]int64 {
	s.t.Helper()
	f, err := os.Open(filepath.Join(s.appDir, "metrics.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return map[string][2]int64{}
	}
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	samples, err := tokenmetrics.ReadJSONLines(f)
	if err != nil {
		s.t.Fatalf("token metrics stream: %v", err)
	}
	out := map[string][2]int64{}
	for _, m := range samples {
		if m.Tenant == tenantID {
			v := out[m.Deployment]
			out[m.Deployment] = [2]int64{v[0] + m.PromptTokens, v[1] + m.CompletionTokens}
		}
	}
	return out
}
