package ingest_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/offpath/offpath/internal/tokenmetrics"
)

// The end-to-end tests run the real handler binary with the repository's
// app folder under the dev host (package apptest), against a private
// Azurite and the simulator: a document is uploaded to incoming/ and
// followed through the blob trigger, Service Bus (the dev host's stand-in,
// with DeliveryCount and dead-lettering) and the process function to
// ingested/, the ledger and its status.

var cliBuild struct {
	once sync.Once
	path string
	err  error
}

// cliBinary is the operator CLI, built once per test binary.
func cliBinary(t *testing.T) string {
	t.Helper()
	cliBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "ingest-e2e-")
		if err != nil {
			cliBuild.err = err
			return
		}
		cliBuild.path = filepath.Join(dir, "offpath")
		cmd := exec.Command("go", "build", "-o", cliBuild.path, "./cmd/offpath")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			cliBuild.err = fmt.Errorf("go build ./cmd/offpath: %v\n%s", err, out)
		}
	})
	if cliBuild.err != nil {
		t.Fatal(cliBuild.err)
	}
	return cliBuild.path
}

// offpath runs an operator CLI command against the stack's API, as the
// operator (the admin key). Flags after the command's arguments are its own.
func (s *stack) offpath(args ...string) (string, error) {
	s.t.Helper()
	cmd := exec.Command(cliBinary(s.t), append(args, "-url", s.app.URL, "-function-key", apptest.FunctionKey, "-key", s.app.AdminKey)...)
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

// stack is the whole app (package apptest) with the queue path's tenants:
// acme (active, alias ingest) and sleepy (suspended).
type stack struct {
	t       *testing.T
	app     *apptest.Stack
	blobs   *azblob.Client
	broker  *sbemu.Broker
	sim     *aoaisim.Server
	docs    *tablestore.Documents
	ledger  *tablestore.Ledger
	results *blobstore.Documents
	out     interface{ String() string }
}

// output is what the handler and the dev host printed so far.
type output struct{ app *apptest.Stack }

func (o output) String() string { return o.app.Output() }

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	ctx := context.Background()
	simCfg := aoaisim.Config{Deployments: testDeployments(16), DisableRateLimits: true}
	if o.sim != nil {
		o.sim(&simCfg)
	}
	maxDelivery := cmp.Or(o.maxDelivery, 10)
	timeout := cmp.Or(o.functionTimeout, "00:01:00")
	settings := map[string]string{
		// The handler knows the queue's MaxDeliveryCount, as the infra tells it.
		"OFFPATH_INGEST_MAX_DELIVERY_COUNT": strconv.Itoa(maxDelivery),
		"OFFPATH_AOAI_BASE_BACKOFF":         "20ms", "OFFPATH_AOAI_MAX_BACKOFF": "200ms",
		"OFFPATH_LOG_LEVEL":           "info",
		"OFFPATH_BATCH_POLL_SCHEDULE": apptest.NeverSchedule,
		"OFFPATH_TOKEN_METRICS_FILE":  filepath.Join(t.TempDir(), "metrics.jsonl"),
	}
	for k, v := range o.settings {
		settings[k] = v
	}
	app := apptest.Start(t, apptest.Config{
		Sim: simCfg, Settings: settings,
		Tenants:    map[string][]string{"acme": {"ingest"}, "sleepy": {"ingest"}},
		ServiceBus: sbemu.Options{LockDuration: cmp.Or(o.lockDuration, 5*time.Second), MaxDeliveryCount: maxDelivery},
		HostJSON: func(b []byte) []byte {
			return regexp.MustCompile(`"functionTimeout":\s*"[^"]*"`).ReplaceAll(b, []byte(`"functionTimeout": "`+timeout+`"`))
		},
	})
	if _, err := app.Tenants.Update(ctx, "sleepy", func(tn *tenant.Tenant) error {
		tn.State = tenant.Suspended
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Blobs.CreateContainer(ctx, "incoming", nil); err != nil {
		t.Fatal(err)
	}
	return &stack{t: t, app: app, blobs: app.Blobs, broker: app.Broker, sim: app.Sim,
		docs:    tablestore.NewDocuments(app.Tables, "", nil),
		ledger:  app.Ledger,
		results: blobstore.NewDocuments(app.Blobs, "incoming", "ingested", 0),
		out:     output{app},
	}
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
	if err := s.app.KillHandler(); err != nil {
		s.t.Fatal(err)
	}
}

// streamed sums the handler's token metrics stream per deployment (prompt,
// completion), as the shipped query sums Application Insights' copy.
func (s *stack) streamed(tenantID string) map[string][2]int64 {
	s.t.Helper()
	f, err := os.Open(s.app.Settings["OFFPATH_TOKEN_METRICS_FILE"])
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
