package tokenmetrics_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/offpath/offpath/internal/tokenmetrics"
)

func TestPrometheus_TextFormat(t *testing.T) {
	t.Parallel()
	p := tokenmetrics.NewPrometheus(tokenmetrics.PrometheusOptions{})
	ctx := context.Background()
	p.Emit(ctx, []ledger.Sample{
		{Tenant: "contoso", Alias: "summarize", Deployment: "chat", Path: ledger.Queue, PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120},
		{Tenant: "contoso", Alias: "summarize", Deployment: "chat", Path: ledger.Queue, PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55},
		{Tenant: `we"ird\`, Alias: "a", Deployment: "batch", Path: ledger.Batch, PromptTokens: -30, TotalTokens: -30},
	})
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	for _, want := range []string{
		"# TYPE offpath_tokens_total counter\n",
		`offpath_tokens_total{tenant="contoso",alias="summarize",deployment="chat",path="queue",kind="prompt"} 150` + "\n",
		`offpath_tokens_total{tenant="contoso",alias="summarize",deployment="chat",path="queue",kind="completion"} 25` + "\n",
		`offpath_tokens_corrected_total{tenant="we\"ird\\",alias="a",deployment="batch",path="batch",kind="prompt"} 30` + "\n",
		`offpath_tokens_total{tenant="we\"ird\\",alias="a",deployment="batch",path="batch",kind="completion"} 0` + "\n",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("missing %q in\n%s", want, body)
		}
	}
	parseExposition(t, string(body))
	if strings.Contains(string(body), " -") {
		t.Errorf("a counter went negative:\n%s", body)
	}
	resp, err = http.Post(srv.URL+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d", resp.StatusCode)
	}
}

// sampleLine is one sample of the text exposition format: a metric name,
// labels of quoted, escaped values, and an integer value.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\} (-?[0-9]+)$`)

// parseExposition checks every line of body against the text format and
// returns the samples by their full series text (name and labels).
func parseExposition(t *testing.T, body string) (samples map[string]int64, types map[string]string) {
	t.Helper()
	samples, types = map[string]int64{}, map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		} else if len(f) >= 3 && f[0] == "#" && f[1] == "HELP" {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a sample line of the text format: %q", line)
		}
		if _, ok := types[m[1]]; !ok {
			t.Errorf("sample %q before its TYPE", line)
		}
		v, _ := strconv.ParseInt(m[3], 10, 64)
		samples[m[1]+"{"+m[2]+"}"] = v
	}
	return samples, types
}

// scrape serves one GET /metrics and returns its samples and types.
func scrape(t *testing.T, p *tokenmetrics.Prometheus) (map[string]int64, map[string]string) {
	t.Helper()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return parseExposition(t, rec.Body.String())
}

// TestPrometheus_Documents counts settled deliveries by tenant and outcome.
func TestPrometheus_Documents(t *testing.T) {
	t.Parallel()
	p := tokenmetrics.NewPrometheus(tokenmetrics.PrometheusOptions{})
	p.Settled("contoso", outcome.Done)
	p.Settled("contoso", outcome.Done)
	p.Settled("contoso", outcome.Transient)
	p.Settled("_unattributed", outcome.Rejected)
	p.Emit(context.Background(), []ledger.Sample{{Tenant: "contoso", Alias: "a", Deployment: "d", Path: ledger.Queue, PromptTokens: 7}})
	samples, types := scrape(t, p)
	for name, typ := range map[string]string{"offpath_documents_total": "counter", "offpath_batch_jobs": "gauge", "offpath_tokens_total": "counter"} {
		if types[name] != typ {
			t.Errorf("TYPE of %s = %q, want %s", name, types[name], typ)
		}
	}
	for series, want := range map[string]int64{
		`offpath_documents_total{tenant="contoso",outcome="done"}`:                                   2,
		`offpath_documents_total{tenant="contoso",outcome="transient"}`:                              1,
		`offpath_documents_total{tenant="_unattributed",outcome="rejected"}`:                         1,
		`offpath_tokens_total{tenant="contoso",alias="a",deployment="d",path="queue",kind="prompt"}`: 7,
	} {
		if got, ok := samples[series]; !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d\n%v", series, got, ok, want, samples)
		}
	}
	for series := range samples {
		if strings.HasPrefix(series, "offpath_batch_jobs") {
			t.Errorf("jobs by state without a job table: %s", series)
		}
	}
}

// TestPrometheus_BatchJobsFromTheJobTable: the gauge is the job table's
// count (on Azurite, through tablestore), every state shown, 0 where no job
// is; a later scrape within the TTL reuses the read, one after it sees the
// table's change.
func TestPrometheus_BatchJobsFromTheJobTable(t *testing.T) {
	t.Parallel()
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: shared.Get(t).ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	jobs := tablestore.NewJobs(svc, "promjobs"+strconv.FormatInt(time.Now().UnixNano()%1e9, 10), nil)
	ctx := context.Background()
	now := time.Now().UTC()
	var held batch.Job
	for i, st := range []batch.State{batch.Held, batch.Submitted, batch.Submitted, batch.Harvested} {
		id, err := batch.NewJobID(now.Add(time.Duration(i)*time.Millisecond), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		j, err := jobs.Create(ctx, batch.Job{ID: id, Tenant: "contoso", Alias: "summarize", State: st, Created: now, Updated: now, Items: 1}, "")
		if err != nil {
			t.Fatal(err)
		}
		if st == batch.Held {
			held = j
		}
	}
	clock := &fakeClock{at: now}
	p := tokenmetrics.NewPrometheus(tokenmetrics.PrometheusOptions{Jobs: jobs, JobsTTL: 30 * time.Second, Now: clock.now})
	want := map[string]int64{"accepted": 0, "held": 1, "submitted": 2, "completed": 0, "failed": 0, "expired": 0, "cancelled": 0, "harvested": 1}
	check := func(when string, want map[string]int64) {
		t.Helper()
		samples, types := scrape(t, p)
		if types["offpath_batch_jobs"] != "gauge" {
			t.Errorf("%s: TYPE of offpath_batch_jobs = %q", when, types["offpath_batch_jobs"])
		}
		n := 0
		for series := range samples {
			if strings.HasPrefix(series, "offpath_batch_jobs{") {
				n++
			}
		}
		for state, v := range want {
			if got, ok := samples[`offpath_batch_jobs{state="`+state+`"}`]; !ok || got != v {
				t.Errorf("%s: jobs %s = %d (present %v), want %d", when, state, got, ok, v)
			}
		}
		if n != len(want) {
			t.Errorf("%s: %d job series, want %d: %v", when, n, len(want), samples)
		}
	}
	check("first scrape", want)
	held.State = batch.Submitted
	if _, err := jobs.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	clock.advance(29 * time.Second)
	check("within the TTL", want)
	clock.advance(2 * time.Second)
	want["held"], want["submitted"] = 0, 3
	check("after the TTL", want)
}

// countJobs is a job table that counts its reads, blocks them until
// release is closed and fails them while fail is set.
type countJobs struct {
	mu      sync.Mutex
	reads   int
	fail    bool
	release chan struct{}
}

func (c *countJobs) CountByState(ctx context.Context) (map[string]int, error) {
	c.mu.Lock()
	c.reads++
	fail, release := c.fail, c.release
	c.mu.Unlock()
	if release != nil {
		<-release
	}
	if fail {
		return nil, errors.New("table storage is unreachable")
	}
	return map[string]int{"held": 2}, nil
}

// TestPrometheus_BatchJobsSharedReadAndFailure: concurrent scrapes share
// one read of the job table; a failed read shows the family without series
// (not the last count), and the next scrape reads again.
func TestPrometheus_BatchJobsSharedReadAndFailure(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{at: time.Now()}
	src := &countJobs{release: make(chan struct{})}
	p := tokenmetrics.NewPrometheus(tokenmetrics.PrometheusOptions{Jobs: src, Now: clock.now, Log: zerolog.Nop()})
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			bodies[i] = rec.Body.String()
		}()
	}
	// Every scrape has found no count (each asked the clock once; the
	// first, reading, twice) and the read has started: let it finish.
	poll.Until(t, 10*time.Second, "every scrape started and the read begun", func() bool {
		src.mu.Lock()
		started := src.reads > 0
		src.mu.Unlock()
		return started && clock.calls() > len(bodies)
	})
	close(src.release)
	wg.Wait()
	src.mu.Lock()
	reads := src.reads
	src.release = nil
	src.mu.Unlock()
	if reads != 1 {
		t.Errorf("%d concurrent scrapes read the job table %d times, want once", len(bodies), reads)
	}
	for _, b := range bodies {
		if !strings.Contains(b, `offpath_batch_jobs{state="held"} 2`) {
			t.Errorf("a scrape without the count:\n%s", b)
		}
	}

	src.mu.Lock()
	src.fail = true
	src.mu.Unlock()
	clock.advance(time.Minute)
	samples, types := scrape(t, p)
	if types["offpath_batch_jobs"] != "gauge" {
		t.Errorf("the family is gone on a failed read: %v", types)
	}
	for series := range samples {
		if strings.HasPrefix(series, "offpath_batch_jobs{") {
			t.Errorf("a failed read shows %s", series)
		}
	}
	src.mu.Lock()
	src.fail = false
	src.mu.Unlock()
	samples, _ = scrape(t, p) // not cached: read again at once
	if samples[`offpath_batch_jobs{state="held"}`] != 2 {
		t.Errorf("after the table came back: %v", samples)
	}
	if src.reads != 3 {
		t.Errorf("reads = %d, want 3", src.reads)
	}
}

type fakeClock struct {
	mu sync.Mutex
	at time.Time
	n  int
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.at
}

func (c *fakeClock) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

func TestPrometheus_BatchScheduler(t *testing.T) {
	t.Parallel()
	p := tokenmetrics.NewPrometheus(tokenmetrics.PrometheusOptions{})
	p.Placed("summarize", "mini-batch-eu", "cheaper_full")
	p.Placed("summarize", "mini-batch-eu", "cheaper_full")
	p.Placed("summarize", "mini-batch", "cheapest")
	p.CooledOff("mini-batch", "token_limit_exceeded")
	p.Fallback("summarize", "validating")
	p.Fallback("summarize", "validating")
	p.Fallback("extract", "late")
	samples, types := scrape(t, p)
	for name, typ := range map[string]string{"offpath_batch_placements_total": "counter", "offpath_batch_cooloffs_total": "counter",
		"offpath_batch_fallbacks_total": "counter"} {
		if types[name] != typ {
			t.Errorf("TYPE of %s = %q, want %s", name, types[name], typ)
		}
	}
	for series, want := range map[string]int64{
		`offpath_batch_placements_total{alias="summarize",deployment="mini-batch-eu",reason="cheaper_full"}`: 2,
		`offpath_batch_placements_total{alias="summarize",deployment="mini-batch",reason="cheapest"}`:        1,
		`offpath_batch_cooloffs_total{deployment="mini-batch",reason="token_limit_exceeded"}`:                1,
		`offpath_batch_fallbacks_total{alias="summarize",reason="validating"}`:                               2,
		`offpath_batch_fallbacks_total{alias="extract",reason="late"}`:                                       1,
	} {
		if got, ok := samples[series]; !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d\n%v", series, got, ok, want, samples)
		}
	}
}
