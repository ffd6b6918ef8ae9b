package openaiapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

func TestMain(m *testing.M) {
	code := m.Run()
	apptest.Cleanup()
	os.Exit(code)
}

// apiVersion is the classic surface's version the Azure clients send.
const apiVersion = "2025-04-01-preview"

// v1Client is the OpenAI client pointed at the door's v1 surface, with the
// tenant's offpath key and the function key, as an application would.
func v1Client(s *apptest.Stack, tenant string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(s.URL + "/api/openai/v1/"), option.WithAPIKey(s.Keys[tenant]),
		option.WithHeader("x-functions-key", apptest.FunctionKey),
	}, opts...)...)
}

// classicClient is the Azure OpenAI client on the classic surface.
func classicClient(s *apptest.Stack, tenant string) openai.Client {
	return openai.NewClient(azure.WithEndpoint(s.URL+"/api", apiVersion), azure.WithAPIKey(s.Keys[tenant]),
		azure.WithUnsafeAllowHTTP(), option.WithHeader("x-functions-key", apptest.FunctionKey))
}

// inputLine is one request line of a batch input file.
type inputLine struct {
	CustomID string         `json:"custom_id"`
	Method   string         `json:"method"`
	URL      string         `json:"url"`
	Body     map[string]any `json:"body"`
}

func chatLine(id, model, prompt string) inputLine {
	return inputLine{CustomID: id, Method: "POST", URL: "/v1/chat/completions", Body: map[string]any{
		"model": model, "max_tokens": 16,
		"messages": []map[string]string{{"role": "system", "content": "Summarise."}, {"role": "user", "content": prompt}},
	}}
}

// jsonl builds an input file of n requests for alias summarize; edit
// changes line i (0-based) before it is written.
func jsonl(t testing.TB, prefix string, n int, edit func(i int, l *inputLine)) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range n {
		l := chatLine(fmt.Sprintf("%s-%04d", prefix, i), "summarize", fmt.Sprintf("Ticket %d: the VPN drops every hour.", i))
		if edit != nil {
			edit(i, &l)
		}
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func upload(t testing.TB, c openai.Client, name string, body []byte) (*openai.FileObject, error) {
	t.Helper()
	return c.Files.New(context.Background(), openai.FileNewParams{
		File: openai.File(bytes.NewReader(body), name, "application/jsonl"), Purpose: openai.FilePurposeBatch})
}

func create(t testing.TB, c openai.Client, fileID string, opts ...option.RequestOption) *openai.Batch {
	t.Helper()
	b, err := c.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: fileID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
		Metadata: map[string]string{"team": "support"}}, opts...)
	if err != nil {
		t.Fatalf("create batch: %v", describe(err))
	}
	return b
}

// describe makes an SDK error say what the server said.
func describe(err error) error {
	var ae *openai.Error
	if errors.As(err, &ae) {
		return fmt.Errorf("%d %s: %s", ae.StatusCode, ae.Code, ae.Message)
	}
	return err
}

// apiError is the SDK's error, or fails the test.
func apiError(t testing.TB, err error) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v, want an API error", err)
	}
	return ae
}

// await polls the batch as a client does until until says so.
func await(t testing.TB, c openai.Client, id string, until func(*openai.Batch) bool) *openai.Batch {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var seen []string
	var b *openai.Batch
	if !poll.Within(time.Until(deadline), func() bool {
		var err error
		if b, err = c.Batches.Get(context.Background(), id); err != nil {
			t.Fatalf("get batch: %v", describe(err))
		}
		if len(seen) == 0 || seen[len(seen)-1] != string(b.Status) {
			seen = append(seen, string(b.Status))
		}
		return until(b)
	}) {
		t.Fatalf("batch %s: statuses %v, still waiting", id, seen)
	}
	t.Logf("batch %s went %v", id, seen)
	return b
}

func terminal(b *openai.Batch) bool {
	switch b.Status {
	case openai.BatchStatusCompleted, openai.BatchStatusFailed, openai.BatchStatusExpired, openai.BatchStatusCancelled:
		return true
	}
	return false
}

// outputLine is a line of an output or error file as Azure writes it.
type outputLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int `json:"status_code"`
		Body       struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens     int64 `json:"prompt_tokens"`
				CompletionTokens int64 `json:"completion_tokens"`
				TotalTokens      int64 `json:"total_tokens"`
			} `json:"usage"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// download reads a file's lines through the SDK.
func download(t testing.TB, c openai.Client, id string) []outputLine {
	t.Helper()
	res, err := c.Files.Content(context.Background(), id)
	if err != nil {
		t.Fatalf("content of %s: %v", id, describe(err))
	}
	defer res.Body.Close()
	var out []outputLine
	br := bufio.NewReaderSize(res.Body, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var l outputLine
			if jerr := json.Unmarshal(line, &l); jerr != nil {
				t.Fatalf("file %s: line %q: %v", id, line, jerr)
			}
			out = append(out, l)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// jobLedger sums the ledger rows of one job.
func jobLedger(t testing.TB, s *apptest.Stack, tenant, batchID string) (rows int, prompt, completion int64) {
	t.Helper()
	entries, err := s.Ledger.Month(context.Background(), tenant, ledger.MonthOf(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	job := strings.TrimPrefix(batchID, "batch_")
	for _, e := range entries {
		if strings.HasPrefix(e.Unit, batch.LedgerUnit(job, 0)[:len("batch:")+len(job)]) {
			rows++
			prompt += e.PromptTokens
			completion += e.CompletionTokens
		}
	}
	return rows, prompt, completion
}

// usageReport is the tenant's usage report through the REST API.
func usageReport(t testing.TB, s *apptest.Stack, tenant string) ledger.ReportView {
	t.Helper()
	var r ledger.ReportView
	if st := s.Do(http.MethodGet, "/api/v1/usage", tenant, nil, &r); st != http.StatusOK {
		t.Fatalf("usage: %d", st)
	}
	return r
}

// discard is a ResponseWriter that drops the reply.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
