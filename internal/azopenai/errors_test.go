package azopenai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/outcome"
)

// cannedServer answers every request with status, headers and body.
func cannedServer(t *testing.T, status int, header http.Header, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

func TestClassification(t *testing.T) {
	t.Parallel()
	azErr := func(code string) string { return `{"error":{"code":"` + code + `","message":"m"}}` }
	tests := []struct {
		name     string
		status   int
		header   http.Header
		body     string
		want     outcome.Kind
		sentinel error
		hint     time.Duration
	}{
		{"400 invalid", 400, nil, azErr("invalid_request"), outcome.Rejected, nil, 0},
		{"400 quota in code", 400, nil, azErr("token_limit_exceeded"), outcome.Transient, batch.ErrQuotaFull, 0},
		{"400 quota in message only", 400, nil, `{"error":{"code":"invalid_request","message":"Enqueued token limit reached (token_limit_exceeded)"}}`, outcome.Transient, batch.ErrQuotaFull, 0},
		{"401", 401, nil, azErr("401"), outcome.Transient, batch.ErrAzureAuth, 0},
		{"403", 403, nil, azErr("PermissionDenied"), outcome.Transient, batch.ErrAzureAuth, 0},
		{"404", 404, nil, azErr("404"), outcome.Rejected, batch.ErrAzureNotFound, 0},
		{"409", 409, nil, azErr("invalid_request"), outcome.Rejected, batch.ErrAzureConflict, 0},
		{"413", 413, nil, azErr("too_large"), outcome.Rejected, nil, 0},
		{"429 retry-after-ms", 429, http.Header{"Retry-After-Ms": {"1500"}}, azErr("429"), outcome.Transient, nil, 1500 * time.Millisecond},
		{"429 Retry-After", 429, http.Header{"Retry-After": {"7"}}, azErr("429"), outcome.Transient, nil, 7 * time.Second},
		{"500 without JSON", 500, nil, "oops", outcome.Transient, nil, 0},
		{"503", 503, nil, azErr("ServiceUnavailable"), outcome.Transient, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts, _ := cannedServer(t, tt.status, tt.header, tt.body)
			c, err := azopenai.NewBatchClient(azopenai.BatchConfig{Endpoint: ts.URL, AllowLoopbackHTTP: true, APIKey: "k", MaxAttempts: 1}, nil, zerolog.Nop())
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			_, err = c.GetBatch(context.Background(), "batch_1")
			if got := outcome.Of(err); got != tt.want {
				t.Errorf("Of(%v) = %v, want %v", err, got, tt.want)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tt.sentinel)
			}
			if got := outcome.RetryAfter(err); got != tt.hint {
				t.Errorf("RetryAfter = %v, want %v", got, tt.hint)
			}
			if !strings.Contains(err.Error(), "get batch batch_1") || !strings.Contains(err.Error(), "HTTP") {
				t.Errorf("error %q lacks the operation or the status", err)
			}
		})
	}
}

// TestRetry_HonoursRetryAfter: two 429s with retry-after-ms, then success.
func TestRetry_HonoursRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var throttled atomic.Int32
	env := newSim(t, simConfig(), func(_ *aoaisim.Server, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/batches") && throttled.Add(1) <= 2 {
				w.Header().Set("retry-after-ms", "40")
				w.Header().Set("Retry-After", "1")
				http.Error(w, `{"error":{"code":"429","message":"Please retry after 1 second."}}`, http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey})
	file := upload(t, ctx, c, writeInput(t, t.TempDir(), "r", batchDep, items(1, "t")))
	created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "r"})
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	start := time.Now()
	if _, err := c.GetBatch(ctx, created.Batch.ID); err != nil {
		t.Fatalf("GetBatch after two 429s: %v", err)
	}
	if el := time.Since(start); el < 80*time.Millisecond || el > 900*time.Millisecond {
		t.Errorf("GetBatch took %v, want about 2 × 40 ms (retry-after-ms preferred to Retry-After)", el)
	}
	if got := env.sim.Stats().Routes[aoaisim.RouteBatchesGet]; got != 1 || throttled.Load() != 3 {
		t.Errorf("simulator saw %d gets after %d attempts, want 1 after 3", got, throttled.Load())
	}
}

func TestRetry_BudgetAndLongWaits(t *testing.T) {
	t.Parallel()
	ts, n := cannedServer(t, 429, http.Header{"Retry-After": {"120"}}, `{"error":{"code":"429","message":"m"}}`)
	c, err := azopenai.NewBatchClient(azopenai.BatchConfig{Endpoint: ts.URL, AllowLoopbackHTTP: true, APIKey: "k"}, nil, zerolog.Nop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	start := time.Now()
	_, err = c.GetBatch(context.Background(), "b")
	if outcome.RetryAfter(err) != 2*time.Minute || n.Load() != 1 || time.Since(start) > time.Second {
		t.Errorf("GetBatch = %v (hint %v) after %d requests; want the 2-minute hint returned at once", err, outcome.RetryAfter(err), n.Load())
	}

	ts, n = cannedServer(t, 503, http.Header{"Retry-After-Ms": {"5"}}, `{"error":{"code":"ServiceUnavailable","message":"m"}}`)
	c, err = azopenai.NewBatchClient(azopenai.BatchConfig{Endpoint: ts.URL, AllowLoopbackHTTP: true, APIKey: "k", MaxAttempts: 3}, nil, zerolog.Nop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := c.GetBatch(context.Background(), "b"); outcome.Of(err) != outcome.Transient || n.Load() != 3 {
		t.Errorf("GetBatch = %v after %d requests, want transient after 3", err, n.Load())
	}

	ts, n = cannedServer(t, 401, nil, `{"error":{"code":"401","message":"m"}}`)
	c, err = azopenai.NewBatchClient(azopenai.BatchConfig{Endpoint: ts.URL, AllowLoopbackHTTP: true, APIKey: "k"}, nil, zerolog.Nop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := c.GetBatch(context.Background(), "b"); !errors.Is(err, batch.ErrAzureAuth) || n.Load() != 1 {
		t.Errorf("GetBatch = %v after %d requests, want ErrAuth at once", err, n.Load())
	}
}

func TestRetry_AttemptTimeout(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := simConfig()
	cfg.Faults = []aoaisim.FaultRule{{Route: aoaisim.RouteBatchesList, HangRate: 1}}
	env := newSim(t, cfg, nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, RequestTimeout: 100 * time.Millisecond, MaxAttempts: 2})
	for _, err := range c.ListBatches(ctx) {
		if outcome.Of(err) != outcome.Transient || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ListBatches error = %v, want a transient attempt timeout", err)
		}
	}
	if got := env.sim.Stats().FaultHangs; got != 2 {
		t.Errorf("hung requests = %d, want 2 attempts", got)
	}
}

// TestAuthHeaders checks each surface sends exactly its one credential and
// its URL shape. Not parallel: it sets OPENAI_API_KEY, which openai-go reads.
func TestAuthHeaders(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "stray-platform-key") // must not leak into requests
	for _, sf := range surfaces() {
		t.Run(sf.name, func(t *testing.T) {
			var bad atomic.Value
			env := newSim(t, simConfig(), func(_ *aoaisim.Server, next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					key, bearer := r.Header.Values("Api-Key"), r.Header.Values("Authorization")
					switch {
					case sf.cfg.APIKey != "" && (len(key) != 1 || key[0] != aoaisim.DefaultKey || len(bearer) != 0),
						sf.cfg.Credential != nil && (len(key) != 0 || len(bearer) != 1 || bearer[0] != "Bearer entra-token"):
						bad.Store("credential headers api-key=" + strings.Join(key, ",") + " authorization=" + strings.Join(bearer, ","))
					case sf.cfg.Surface == azopenai.Classic && (r.URL.Query().Get("api-version") != azopenai.DefaultBatchAPIVersion || !strings.HasPrefix(r.URL.Path, "/openai/batches")),
						sf.cfg.Surface == azopenai.V1 && (r.URL.Query().Has("api-version") || !strings.HasPrefix(r.URL.Path, "/openai/v1/batches")):
						bad.Store("url " + r.URL.String())
					}
					next.ServeHTTP(w, r)
				})
			})
			c := env.client(t, sf.cfg)
			if _, err := c.GetBatch(testContext(t), "batch_missing"); !errors.Is(err, batch.ErrAzureNotFound) {
				t.Errorf("GetBatch(missing) = %v, want ErrNotFound", err)
			}
			if v := bad.Load(); v != nil {
				t.Error(v)
			}
		})
	}
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]azopenai.BatchConfig{
		"no endpoint":         {APIKey: "k"},
		"path in endpoint":    {Endpoint: "https://r.openai.azure.com/openai/v1", APIKey: "k"},
		"plain http":          {Endpoint: "http://r.openai.azure.com", APIKey: "k", AllowLoopbackHTTP: true},
		"loopback not opted":  {Endpoint: "http://127.0.0.1:1", APIKey: "k"},
		"no credential":       {Endpoint: "https://r.openai.azure.com"},
		"two credentials":     {Endpoint: "https://r.openai.azure.com", APIKey: "k", Credential: entraCred{}},
		"unknown surface":     {Endpoint: "https://r.openai.azure.com", APIKey: "k", Surface: "v2"},
		"expiry below 14 d":   {Endpoint: "https://r.openai.azure.com", APIKey: "k", FileExpiry: time.Hour},
		"output above 30 d":   {Endpoint: "https://r.openai.azure.com", APIKey: "k", OutputExpiry: 31 * 24 * time.Hour},
		"page size above 100": {Endpoint: "https://r.openai.azure.com", APIKey: "k", ListPageSize: 101},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("Validate(%s) = nil", name)
		}
	}
	if err := (azopenai.BatchConfig{Endpoint: "https://r.openai.azure.com/", Credential: entraCred{}}).Validate(); err != nil {
		t.Errorf("Validate(minimal) = %v", err)
	}
}
