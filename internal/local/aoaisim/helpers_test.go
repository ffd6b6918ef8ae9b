package aoaisim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
)

const (
	apiVersion = "2025-04-01-preview"
	chatDep    = "gpt-4o-mini"
	embedDep   = "text-embedding-3-small"
	batchDep   = "gpt-4o-mini-batch"
)

// epoch is the start of every frozen test clock.
func epoch() time.Time { return time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC) }

// testDeployments are a chat, an embedding and a batch deployment, unlimited.
func testDeployments() []aoaisim.Deployment {
	return []aoaisim.Deployment{
		{Name: chatDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18"},
		{Name: embedDep, Model: "text-embedding-3-small"},
		{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch},
	}
}

// sim is a running simulator and its clients.
type sim struct {
	srv     *aoaisim.Server
	url     string
	clock   *aoaisim.Clock
	classic openai.Client
	v1      openai.Client
	admin   openai.Client // base URL at the server root, for /_sim/
}

// clients returns both surfaces, keyed by name, for table tests.
func (s *sim) clients() []struct {
	name   string
	client openai.Client
} {
	return []struct {
		name   string
		client openai.Client
	}{{"classic", s.classic}, {"v1", s.v1}}
}

// newSim starts a simulator over httptest. Without a clock in cfg it uses a
// frozen clock at epoch, moved only by Advance.
func newSim(t testing.TB, cfg aoaisim.Config) *sim {
	t.Helper()
	if cfg.Deployments == nil {
		cfg.Deployments = testDeployments()
	}
	if cfg.Clock == nil {
		cfg.Clock = aoaisim.NewClock(epoch(), 0)
	}
	srv, err := aoaisim.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	admin := openai.NewClient(option.WithBaseURL(ts.URL+"/"), option.WithAPIKey(aoaisim.DefaultKey), option.WithMaxRetries(0))
	return &sim{srv: srv, url: ts.URL, clock: cfg.Clock, classic: classicClient(ts.URL), v1: v1Client(ts.URL), admin: admin}
}

func classicClient(url string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append(azureOptions(url, aoaisim.DefaultKey), opts...)...)
}

// azureOptions point the client at the classic surface with key, plain HTTP
// on loopback and no retries (they would hide the simulator's behaviour).
func azureOptions(url, key string) []option.RequestOption {
	return []option.RequestOption{
		azure.WithEndpoint(url, apiVersion), azure.WithAPIKey(key),
		azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0),
	}
}

func v1Client(url string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(url + "/openai/v1/"), option.WithAPIKey(aoaisim.DefaultKey), option.WithMaxRetries(0),
	}, opts...)...)
}

// apiError asserts err is an *openai.Error and returns it.
func apiError(t testing.TB, err error) *openai.Error {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *openai.Error", err, err)
	}
	return e
}

// chatLine is one batch input line for the chat route.
func chatLine(customID, deployment, url, prompt string) string {
	line, _ := json.Marshal(map[string]any{
		"custom_id": customID, "method": "POST", "url": url,
		"body": map[string]any{"model": deployment, "max_tokens": 64,
			"messages": []map[string]string{{"role": "system", "content": "Summarise."}, {"role": "user", "content": prompt}}},
	})
	return string(line)
}

// chatLines returns n lines t-0000.. for deployment with distinct prompts.
func chatLines(n int, deployment string) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = chatLine(fmt.Sprintf("t-%04d", i), deployment, "/v1/chat/completions", fmt.Sprintf("ticket %d: the printer is on fire", i))
	}
	return lines
}

// upload sends content as a batch file and returns its ID.
func upload(t testing.TB, c openai.Client, content string, expiry int64) string {
	t.Helper()
	params := openai.FileNewParams{File: openai.File(strings.NewReader(content), "input.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch}
	if expiry > 0 {
		params.ExpiresAfter = openai.FileNewParamsExpiresAfter{Seconds: expiry}
	}
	f, err := c.Files.New(context.Background(), params)
	if err != nil {
		t.Fatalf("Files.New: %v", err)
	}
	return f.ID
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") + "\n" }

// createBatch creates a chat batch over fileID.
func createBatch(ctx context.Context, c openai.Client, fileID string, opts ...option.RequestOption) (*openai.Batch, error) {
	return c.Batches.New(ctx, openai.BatchNewParams{
		InputFileID: fileID, Endpoint: openai.BatchNewParamsEndpoint("/chat/completions"),
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
	}, opts...)
}

// waitStatus polls the batch until it has status.
func waitStatus(t testing.TB, c openai.Client, id string, status openai.BatchStatus) *openai.Batch {
	t.Helper()
	return waitFor(t, c, id, string(status), func(b *openai.Batch) bool { return b.Status == status })
}

// waitFor polls the batch (every 2 ms, for at most 20 s) until ok holds.
// The workers run on their own goroutines, so even a frozen clock needs a
// poll after Advance.
func waitFor(t testing.TB, c openai.Client, id, what string, ok func(*openai.Batch) bool) *openai.Batch {
	t.Helper()
	var b *openai.Batch
	if !poll.Within(20*time.Second, func() bool {
		var err error
		if b, err = c.Batches.Get(context.Background(), id); err != nil {
			t.Fatalf("Batches.Get: %v", err)
		}
		return ok(b)
	}) {
		t.Fatalf("batch %s: status %s, counts %+v, errors %+v; want %s", id, b.Status, b.RequestCounts, b.Errors.Data, what)
	}
	return b
}

// resultLine is an output or error file line.
type resultLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readResults downloads a file and parses its lines (streaming).
func readResults(t testing.TB, c openai.Client, fileID string) []resultLine {
	t.Helper()
	resp, err := c.Files.Content(context.Background(), fileID)
	if err != nil {
		t.Fatalf("Files.Content(%s): %v", fileID, err)
	}
	defer resp.Body.Close()
	var out []resultLine
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var l resultLine
			if jerr := json.Unmarshal(line, &l); jerr != nil {
				t.Fatalf("output line %q: %v", line, jerr)
			}
			out = append(out, l)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read content: %v", err)
		}
	}
}
