package audit_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/api"
	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/alerttest"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

// One Azurite serves the package's tests; they keep apart by table names.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	apptest.Cleanup()
	os.Exit(code)
}

const (
	batchDep = "gpt-4o-mini-batch" // in models.json, under "extract" and "summarize"
	rogueDep = "rogue-batch"       // a Global Batch deployment the catalog does not know
	slowDep  = "slow-batch"        // a line every 10 hours: its batches keep running
	// secret is in every prompt the tests send: it must never reach an
	// alert or a log line.
	secret = "CONFIDENTIAL-7731-PAYROLL"
)

// epoch is the simulator's frozen clock at the start of every test.
var epoch = time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC)

// syncBuffer collects log output from concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// countingLedger counts Record calls per unit.
type countingLedger struct {
	*tablestore.Ledger
	mu      sync.Mutex
	records map[string]int
}

func (l *countingLedger) Record(ctx context.Context, e ledger.Entry) error {
	if err := l.Ledger.Record(ctx, e); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records[e.Unit]++
	return nil
}

func (l *countingLedger) count(unit string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records[unit]
}

// env is an audit on a private set of tables in the shared Azurite and an
// in-process simulator on a frozen clock, moved by the test.
type env struct {
	t       testing.TB
	sim     *aoaisim.Server
	ts      *httptest.Server
	clock   *aoaisim.Clock
	azure   *azopenai.BatchClient
	direct  openai.Client // the second door: openai-go straight at the resource
	tables  *tablestoreSet
	ledger  *countingLedger
	catalog *catalog.Catalog
	alerts  *alerttest.Recorder
	logs    *syncBuffer
	// skew is added to the simulator's clock to make the audit's.
	skew atomic.Int64
	opts audit.Options
}

type tablestoreSet struct {
	jobs    *tablestore.Jobs
	audit   *tablestore.Audit
	tenants *tablestore.Tenants
	ledger  *tablestore.Ledger
}

func newEnv(t testing.TB, tweak ...func(*aoaisim.Config)) *env {
	t.Helper()
	speed := 0.0
	cfg := aoaisim.Config{
		Deployments: []aoaisim.Deployment{
			{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch},
			{Name: rogueDep, Model: "gpt-4o", ModelVersion: "2024-08-06", Type: aoaisim.TypeGlobalBatch},
			{Name: slowDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch, BatchLinesPerMinute: 0.1 / 60},
		},
		Clock: aoaisim.NewClock(epoch, speed),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	sim, err := aoaisim.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("aoaisim.New: %v", err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = sim.Close() })
	client, err := azopenai.NewBatchClient(azopenai.BatchConfig{Endpoint: ts.URL, APIKey: aoaisim.DefaultKey, AllowLoopbackHTTP: true,
		MaxRetryWait: 100 * time.Millisecond, MaxAttempts: 2, RequestTimeout: 5 * time.Second}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: shared.Get(t).ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	n := azurite.Suffix()
	b, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, sim: sim, ts: ts, clock: cfg.Clock, azure: client, catalog: cat, alerts: &alerttest.Recorder{}, logs: &syncBuffer{},
		direct: openai.NewClient(option.WithBaseURL(ts.URL+"/openai/v1/"), option.WithAPIKey(aoaisim.DefaultKey), option.WithMaxRetries(0)),
		tables: &tablestoreSet{
			jobs:    tablestore.NewJobs(svc, "ajobs"+n, nil),
			audit:   tablestore.NewAudit(svc, "aaudit"+n),
			tenants: tablestore.NewTenants(svc, "aten"+n),
			ledger:  tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: "aled" + n}),
		},
	}
	e.ledger = &countingLedger{Ledger: e.tables.ledger, records: map[string]int{}}
	e.opts = audit.Options{Azure: client, Active: e.tables.jobs, Jobs: e.tables.jobs, Store: e.tables.audit, Ledger: e.ledger,
		Tenants: e.tables.tenants, Catalog: cat, Alerts: e.alerts, Now: e.now}
	return e
}

// now is the audit's clock: the simulator's, plus the skew.
func (e *env) now() time.Time { return e.clock.Now().Add(time.Duration(e.skew.Load())) }

// later moves the audit's clock (not Azure's) by d.
func (e *env) later(d time.Duration) { e.skew.Add(int64(d)) }

func (e *env) ctx() context.Context {
	logger := zerolog.New(io.MultiWriter(e.logs, zerolog.NewTestWriter(e.t))).Level(zerolog.InfoLevel)
	ctx, cancel := context.WithTimeout(logger.WithContext(context.Background()), time.Minute)
	e.t.Cleanup(cancel)
	return ctx
}

// auditor returns a new Auditor on the env's stores: a fresh process.
func (e *env) auditor(mod ...func(*audit.Options)) *audit.Auditor {
	e.t.Helper()
	o := e.opts
	for _, m := range mod {
		m(&o)
	}
	a, err := audit.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// run runs one audit with a fresh Auditor and fails on an error.
func (e *env) run() audit.Summary {
	e.t.Helper()
	s, err := e.auditor().Run(e.ctx())
	if err != nil {
		e.t.Fatalf("Run: %v", err)
	}
	return s
}

// chatLine is one batch input line.
func chatLine(customID, deployment, prompt string) string {
	line, _ := json.Marshal(map[string]any{
		"custom_id": customID, "method": "POST", "url": "/chat/completions",
		"body": map[string]any{"model": deployment, "max_tokens": 40,
			"messages": []map[string]string{{"role": "system", "content": "Summarise."}, {"role": "user", "content": prompt}}},
	})
	return string(line)
}

// input returns n lines for deployment: each prompt carries the secret,
// line 1 trips the prompt filter and line 2 the completion filter.
func input(n int, deployment string) string {
	var b strings.Builder
	for i := range n {
		p := fmt.Sprintf("%s: ticket %d, the printer on floor %d is on fire again", secret, i, i%7)
		switch i {
		case 1:
			p += " " + aoaisim.DefaultPromptTrigger
		case 2:
			p += " " + aoaisim.DefaultCompletionTrigger
		}
		b.WriteString(chatLine(fmt.Sprintf("line-%04d", i), deployment, p))
		b.WriteByte('\n')
	}
	return b.String()
}

// upload puts a file on the resource straight through openai-go.
func (e *env) upload(name, content string) openai.FileObject {
	e.t.Helper()
	f, err := e.direct.Files.New(context.Background(), openai.FileNewParams{
		File: openai.File(strings.NewReader(content), name, "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		e.t.Fatalf("Files.New: %v", err)
	}
	return *f
}

// directBatch uploads an input and creates a batch on it straight through
// openai-go, as someone bypassing offpath would.
func (e *env) directBatch(name, content string) *openai.Batch {
	e.t.Helper()
	f := e.upload(name, content)
	b, err := e.direct.Batches.New(context.Background(), openai.BatchNewParams{
		InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpoint("/chat/completions"),
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
	})
	if err != nil {
		e.t.Fatalf("Batches.New: %v", err)
	}
	return b
}

// offpathBatch uploads an input named as offpath names them, creates a
// batch carrying offpath's submission key through the azopenai client, and
// records it on the job's part, as the poller does (the job row is made
// if there is none).
func (e *env) offpathBatch(jobID string, part int, content string) batch.AzureBatch {
	e.t.Helper()
	b := e.keyedBatch(jobID, part, content)
	ctx := context.Background()
	j, err := e.tables.jobs.Get(ctx, "contoso", jobID)
	if errors.Is(err, batch.ErrNotFound) {
		j, err = e.tables.jobs.Create(ctx, batch.Job{ID: jobID, Tenant: "contoso", Alias: "summarize", State: batch.Submitted,
			Created: time.Now().UTC()}, "")
	}
	if err != nil {
		e.t.Fatal(err)
	}
	for len(j.Parts) <= part {
		j.Parts = append(j.Parts, batch.Part{Index: len(j.Parts), Deployment: batchDep, Status: batch.PartPending})
	}
	j.Parts[part].Status, j.Parts[part].BatchID, j.Parts[part].InputFileID = batch.PartSubmitted, b.ID, b.InputFileID
	if _, err := e.tables.jobs.Update(ctx, j); err != nil {
		e.t.Fatal(err)
	}
	return b
}

// keyedBatch is offpathBatch without the job's record of it: the batch
// carries offpath's key (and tenant contoso in its metadata), and no job
// claims it.
func (e *env) keyedBatch(jobID string, part int, content string) batch.AzureBatch {
	e.t.Helper()
	f := e.offpathFile(jobID, part, content)
	c, err := e.azure.CreateBatch(context.Background(), batch.Submission{InputFileID: f.ID, JobID: jobID, Part: part,
		Metadata: map[string]string{"tenant": "contoso", "alias": "summarize"}})
	if err != nil {
		e.t.Fatalf("CreateBatch: %v", err)
	}
	return c.Batch
}

// offpathFile uploads a file named as package batch names its inputs.
func (e *env) offpathFile(jobID string, part int, content string) batch.AzureFile {
	e.t.Helper()
	f, err := e.azure.UploadFile(context.Background(), fmt.Sprintf("%s.part%d.jsonl", jobID, part), strings.NewReader(content), int64(len(content)))
	if err != nil {
		e.t.Fatalf("UploadFile: %v", err)
	}
	return f
}

// finish moves the simulator's clock until the batch has ended with its
// files.
func (e *env) finish(id string) batch.AzureBatch {
	e.t.Helper()
	var b batch.AzureBatch
	if !poll.Within(20*time.Second, func() bool {
		var err error
		if b, err = e.azure.GetBatch(context.Background(), id); err != nil {
			e.t.Fatalf("GetBatch: %v", err)
		}
		e.clock.Advance(time.Minute) // the next ask sees the batch a minute on
		return b.FilesReady()
	}) {
		e.t.Fatalf("batch %s still %s", id, b.Status)
	}
	return b
}

// newJobID returns a well-formed offpath job id.
func newJobID(t testing.TB) string {
	t.Helper()
	id, err := batch.NewJobID(time.Now(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// files returns the ids of the files on the simulator.
func (e *env) files() map[string]bool {
	out := map[string]bool{}
	for _, f := range e.sim.State().Files {
		out[f.ID] = true
	}
	return out
}

// secondDoor returns the second_door alerts raised so far.
func (e *env) secondDoor() []alert.Alert { return e.alerts.Named(audit.AlertSecondDoor) }

// lineUsage is what an output or error file reports, read independently of
// the code under test.
type lineUsage struct {
	lines, requests, refusals  int64
	prompt, completion, cached int64
	texts                      []string // answers, to look for in logs
	// job, when set, counts only the lines whose custom_id names it.
	job string
}

// readUsage sums a file's usage straight from its JSON lines.
func (e *env) readUsage(id string, u *lineUsage) {
	e.t.Helper()
	if id == "" {
		return
	}
	res, err := e.direct.Files.Content(context.Background(), id)
	if err != nil {
		e.t.Fatalf("Files.Content(%s): %v", id, err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var l struct {
			CustomID string `json:"custom_id"`
			Response *struct {
				StatusCode int `json:"status_code"`
				Body       struct {
					Usage *struct {
						PromptTokens        int64 `json:"prompt_tokens"`
						CompletionTokens    int64 `json:"completion_tokens"`
						PromptTokensDetails *struct {
							CachedTokens int64 `json:"cached_tokens"`
						} `json:"prompt_tokens_details"`
					} `json:"usage"`
					Choices []struct {
						FinishReason string `json:"finish_reason"`
						Message      struct {
							Content string `json:"content"`
						} `json:"message"`
					} `json:"choices"`
					Error *struct {
						Code string `json:"code"`
					} `json:"error"`
				} `json:"body"`
			} `json:"response"`
		}
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			e.t.Fatalf("output line: %v", err)
		}
		if u.job != "" && !strings.HasPrefix(l.CustomID, u.job+".") {
			continue
		}
		u.lines++
		r := l.Response
		if r == nil || r.StatusCode == 0 {
			continue
		}
		u.requests++
		if r.Body.Error != nil && r.Body.Error.Code == "content_filter" {
			u.refusals++
		}
		for _, c := range r.Body.Choices {
			if c.FinishReason == "content_filter" {
				u.refusals++
			}
			if c.Message.Content != "" {
				u.texts = append(u.texts, c.Message.Content)
			}
		}
		if us := r.Body.Usage; us != nil {
			u.prompt += us.PromptTokens
			u.completion += us.CompletionTokens
			if us.PromptTokensDetails != nil {
				u.cached += us.PromptTokensDetails.CachedTokens
			}
		}
	}
}

// unattributed returns the ledger rows of the Unattributed tenant in the
// epoch's month.
func (e *env) unattributed() []ledger.Entry {
	e.t.Helper()
	rows, err := e.tables.ledger.Month(context.Background(), audit.Unattributed, ledger.MonthOf(epoch))
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

// record returns the audit's record of an id.
func (e *env) record(kind audit.Kind, id string) (audit.Record, bool) {
	e.t.Helper()
	recs, err := e.tables.audit.Load(context.Background(), kind)
	if err != nil {
		e.t.Fatal(err)
	}
	r, ok := recs[id]
	return r, ok
}

// noSecrets fails if a prompt or an answer reached an alert or the logs.
func (e *env) noSecrets(answers []string) {
	e.t.Helper()
	var b strings.Builder
	for _, a := range e.alerts.All() {
		j, _ := json.Marshal(a)
		b.Write(j)
	}
	b.WriteString(e.logs.String())
	all := b.String()
	if strings.Contains(all, secret) || strings.Contains(all, "printer") {
		e.t.Errorf("prompt text in an alert or a log line")
	}
	for _, a := range answers {
		if len(a) >= 8 && strings.Contains(all, a) {
			e.t.Errorf("answer text %q in an alert or a log line", a)
		}
	}
}

// usageReport asks offpath's API, as the admin, for the Unattributed
// tenant's usage in the epoch's month.
func (e *env) usageReport() (int, ledger.ReportView) {
	e.t.Helper()
	key, digest, err := auth.NewAdminKey(rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	hashes, err := auth.ParseAdminKeyHashes(digest)
	if err != nil {
		e.t.Fatal(err)
	}
	srv := api.New(api.Options{Auth: auth.New(auth.Options{Credentials: e.tables.tenants, AdminKeyHashes: hashes}),
		Tenants: e.tables.tenants, Usage: e.tables.ledger, Catalog: e.catalog, Now: e.now})
	r := httptest.NewRequest("GET", "/api/v1/usage?tenant="+audit.Unattributed+"&month="+ledger.MonthOf(epoch).String(), nil)
	r.Header.Set("Authorization", "Bearer "+key)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	var v ledger.ReportView
	if w.Code == 200 {
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			e.t.Fatalf("usage report: %v", err)
		}
	}
	return w.Code, v
}
