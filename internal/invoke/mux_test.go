package invoke_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/outcome"
)

// hostReply is the host's view of a reply: Outputs, Logs, ReturnValue.
type hostReply struct {
	Outputs     map[string]json.RawMessage
	Logs        []string
	ReturnValue json.RawMessage
}

func invokeMux(t *testing.T, m http.Handler, name string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/"+name, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("X-Azure-Functions-InvocationId", "6f0b6b0e-0000-4000-8000-000000000001")
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func envelope(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newMux(opts invoke.Options) *invoke.Mux {
	return invoke.NewMux(zerolog.New(io.Discard), opts)
}

func TestMux_ReplyRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fn      invoke.Func
		outputs map[string]string // binding → the exact JSON the host must receive
		logs    []string
	}{
		{
			name:    "nothing returned still sends an object",
			fn:      func(context.Context, *invoke.Request) (invoke.Result, error) { return invoke.Result{}, nil },
			outputs: map[string]string{},
		},
		{
			name: "a word is never a bare string the host would base64-decode",
			fn: func(context.Context, *invoke.Request) (invoke.Result, error) {
				return invoke.Result{Outputs: map[string]invoke.Output{"status": invoke.Text("done")}}, nil
			},
			outputs: map[string]string{"status": `"` + base64.StdEncoding.EncodeToString([]byte("done")) + `"`},
		},
		{
			name: "a JSON array body stays one message",
			fn: func(context.Context, *invoke.Request) (invoke.Result, error) {
				return invoke.Result{Outputs: map[string]invoke.Output{"out": invoke.Bytes([]byte(`[1,2,3]`))}}, nil
			},
			outputs: map[string]string{"out": `"WzEsMiwzXQ=="`},
		},
		{
			name: "objects pass as objects",
			fn: func(context.Context, *invoke.Request) (invoke.Result, error) {
				row := map[string]string{"PartitionKey": "p", "RowKey": "r"}
				return invoke.Result{Outputs: map[string]invoke.Output{"row": invoke.Object(row)}}, nil
			},
			outputs: map[string]string{"row": `{"PartitionKey":"p","RowKey":"r"}`},
		},
		{
			name: "rejection completes the trigger with its outputs and a log line",
			fn: func(context.Context, *invoke.Request) (invoke.Result, error) {
				res := invoke.Result{Outputs: map[string]invoke.Output{"status": invoke.Object(map[string]string{"state": "rejected"})}}
				return res, outcome.Reject("unknown tenant", nil)
			},
			outputs: map[string]string{"status": `{"state":"rejected"}`},
			logs:    []string{"warn: invocation"},
		},
		{
			name: "refusal completes the trigger",
			fn: func(context.Context, *invoke.Request) (invoke.Result, error) {
				return invoke.Result{}, outcome.Refuse("content_filter")
			},
			outputs: map[string]string{},
			logs:    []string{"warn: invocation"},
		},
		{
			name: "function log lines travel in Logs",
			fn: func(ctx context.Context, _ *invoke.Request) (invoke.Result, error) {
				zerolog.Ctx(ctx).Info().Msg("chunked document")
				zerolog.Ctx(ctx).Debug().Msg("not at debug")
				return invoke.Result{}, nil
			},
			outputs: map[string]string{},
			logs:    []string{"info: chunked document", "info: invocation"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newMux(invoke.Options{})
			m.Handle("ingest-process", invoke.ServiceBusTrigger, tt.fn)
			res, body := invokeMux(t, m, "ingest-process", envelope(t, "servicebus-binary.json"))
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", res.StatusCode, body)
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got hostReply
			if err := json.Unmarshal(body, &got); err != nil || got.Outputs == nil {
				t.Fatalf("reply %s is not a JSON object with Outputs: %v", body, err)
			}
			if len(got.Outputs) != len(tt.outputs) {
				t.Errorf("Outputs = %s, want %d entries", body, len(tt.outputs))
			}
			for k, want := range tt.outputs {
				if string(got.Outputs[k]) != want {
					t.Errorf("Outputs[%q] = %s, want %s", k, got.Outputs[k], want)
				}
			}
			if tt.logs == nil {
				tt.logs = []string{"info: invocation"}
			}
			if strings.Join(got.Logs, "|") != strings.Join(tt.logs, "|") {
				t.Errorf("Logs = %q, want %q", got.Logs, tt.logs)
			}
		})
	}
}

func TestMux_TransientPerTrigger(t *testing.T) {
	t.Parallel()
	fail := func(context.Context, *invoke.Request) (invoke.Result, error) {
		return invoke.Result{}, outcome.Retry(errors.New("model returned 429"), 2500*time.Millisecond)
	}
	panics := func(context.Context, *invoke.Request) (invoke.Result, error) { panic("boom") }
	slow := func(ctx context.Context, _ *invoke.Request) (invoke.Result, error) {
		<-ctx.Done()
		return invoke.Result{}, ctx.Err()
	}
	tests := []struct {
		name    string
		trigger invoke.Trigger
		file    string
		fn      invoke.Func
	}{
		{"service bus abandons", invoke.ServiceBusTrigger, "servicebus-binary.json", fail},
		{"blob retries", invoke.BlobTrigger, "blob-binary.json", fail},
		{"timer logs the failure", invoke.TimerTrigger, "timer.json", fail},
		{"panic is transient", invoke.ServiceBusTrigger, "servicebus-binary.json", panics},
		{"deadline is transient", invoke.ServiceBusTrigger, "servicebus-binary.json", slow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newMux(invoke.Options{Timeout: 50 * time.Millisecond})
			m.Handle("f", tt.trigger, tt.fn)
			res, body := invokeMux(t, m, "f", envelope(t, tt.file))
			if res.StatusCode < 500 {
				t.Errorf("status = %d, want 5xx so that the host retries; body %s", res.StatusCode, body)
			}
			if !json.Valid(body) {
				t.Errorf("error body %q is not JSON", body)
			}
		})
	}

	t.Run("http caller gets 503 with Retry-After", func(t *testing.T) {
		t.Parallel()
		m := newMux(invoke.Options{})
		m.Handle("orders", invoke.HTTPTrigger, fail)
		res, body := invokeMux(t, m, "orders", envelope(t, "http-envelope.json"))
		var got struct{ Outputs map[string]map[string]any }
		if res.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Fatalf("status %d body %s", res.StatusCode, body)
		}
		r := got.Outputs["res"]
		if r["statusCode"] != float64(503) || r["headers"].(map[string]any)["Retry-After"] != "3" {
			t.Errorf("res = %v, want 503 with Retry-After 3", r)
		}
	})
}

func TestMux_HostileInput(t *testing.T) {
	t.Parallel()
	m := newMux(invoke.Options{MaxBody: 1 << 20})
	m.Handle("ingest-process", invoke.ServiceBusTrigger, func(_ context.Context, r *invoke.Request) (invoke.Result, error) {
		_, err := r.ServiceBus("message")
		return invoke.Result{}, err
	})
	huge := append([]byte(`{"Data":{"message":"`), bytes.Repeat([]byte("A"), 50<<20)...)
	huge = append(huge, `"}}`...)
	tests := []struct {
		name string
		body []byte
		want int
	}{
		{"malformed JSON", []byte(`{"Data": {"message": "AA==",`), http.StatusBadRequest},
		{"empty body", nil, http.StatusBadRequest},
		{"not an object", []byte(`"hello"`), http.StatusBadRequest},
		{"JSON null", []byte(`null`), http.StatusBadRequest},
		{"50 MB body", huge, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := invokeMux(t, m, "ingest-process", tt.body)
			if res.StatusCode != tt.want {
				t.Errorf("status = %d, want %d; body %.200s", res.StatusCode, tt.want, body)
			}
			var e struct{ Error string }
			if json.Unmarshal(body, &e) != nil || e.Error == "" {
				t.Errorf("body %.200q is not a clear JSON error", body)
			}
		})
	}
	t.Run("unknown function and wrong method", func(t *testing.T) {
		res, _ := invokeMux(t, m, "nope", envelope(t, "servicebus-binary.json"))
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("unknown function: status %d, want 404", res.StatusCode)
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ingest-process", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("GET invocation: status %d, want 405", rec.Code)
		}
	})
}

// recorder is a Recorder that keeps what it was given.
type recorder struct {
	fail error
	got  []invoke.Rejection
}

func (r *recorder) RecordRejection(_ context.Context, rej invoke.Rejection) error {
	rej.Request = nil // valid during the call only
	r.got = append(r.got, rej)
	return r.fail
}

// TestMux_UndecodableIsARecordedRejection walks every trigger kind with
// data no retry can fix: each is answered 2xx (an HTTP envelope's caller
// gets a 400), recorded once, and never reaches the function.
func TestMux_UndecodableIsARecordedRejection(t *testing.T) {
	t.Parallel()
	triggers := []struct {
		kind    invoke.Trigger
		binding string
		good    string // a decodable Data.<binding>
	}{
		{invoke.ServiceBusTrigger, "message", `"eyJhIjoxfQ=="`},
		{invoke.BlobTrigger, "blob", `{"Source":"AzureStorageBlobs","Content":{"Length":3}}`},
		{invoke.TimerTrigger, "timer", `{"IsPastDue":false}`},
		{invoke.HTTPTrigger, "req", `{"Method":"POST","Url":"http://x/api/a"}`},
	}
	garbage := []struct{ name, body string }{
		{"invalid base64", `{"Data": {"%s": "!!not base64!!"}, "Metadata": {"name": "\"acme/a.txt\""}}`},
		{"wrong JSON type", `{"Data": {"%s": 12}, "Metadata": {"name": "\"acme/a.txt\""}}`},
		{"array", `{"Data": {"%s": [1, 2]}, "Metadata": {"name": "\"acme/a.txt\""}}`},
		{"missing Data", `{"Metadata": {"name": "\"acme/a.txt\"", "x": "%s"}}`},
		{"Data not an object", `{"Data": "%s", "Metadata": {}}`},
		{"Metadata not an object", `{"Data": {"%s": GOOD}, "Metadata": 5}`},
		{"bad metadata value", `{"Data": {"%s": GOOD}, "Metadata": {"DeliveryCount": "\"many\"", "IsPastDue": 1, "Uri": "\"https://st.blob.core.windows.net/incoming/acme/a.txt\""}, "Hmm": 1}`},
	}
	for _, tr := range triggers {
		for _, g := range garbage {
			body := strings.ReplaceAll(strings.Replace(g.body, "%s", tr.binding, 1), "GOOD", tr.good)
			rec := &recorder{}
			m := newMux(invoke.Options{Rejections: rec})
			called := false
			m.HandleTrigger("f", tr.kind, tr.binding, func(context.Context, *invoke.Request) (invoke.Result, error) {
				called = true
				return invoke.Result{}, nil
			})
			if tr.kind == invoke.TimerTrigger && g.name == "bad metadata value" {
				body = strings.Replace(body, `"IsPastDue":false`, `"IsPastDue":"sometimes"`, 1)
			}
			res, reply := invokeMux(t, m, "f", []byte(body))
			if g.name == "bad metadata value" && (tr.kind == invoke.BlobTrigger || tr.kind == invoke.HTTPTrigger) ||
				g.name == "array" && tr.kind == invoke.ServiceBusTrigger {
				// Nothing undecodable for these: a blob and an HTTP request
				// read neither DeliveryCount nor IsPastDue, and a message
				// body may be JSON (its function judges it).
				if res.StatusCode != http.StatusOK || !called || len(rec.got) != 0 {
					t.Errorf("%s × %s: status %d, called %v, recorded %d; want the function to run", tr.kind, g.name, res.StatusCode, called, len(rec.got))
				}
				continue
			}
			if res.StatusCode != http.StatusOK || called || len(rec.got) != 1 {
				t.Errorf("%s × %s: status %d, called %v, recorded %d; want 200, a recorded rejection, the function not called; reply %s",
					tr.kind, g.name, res.StatusCode, called, len(rec.got), reply)
				continue
			}
			if r := rec.got[0]; r.Function != "f" || r.Trigger != tr.kind || r.Binding != tr.binding || !strings.Contains(r.Reason, "invalid invocation envelope") || r.InvocationID == "" {
				t.Errorf("%s × %s: recorded %+v", tr.kind, g.name, r)
			}
			if strings.Contains(rec.got[0].Reason, "!!not base64!!") {
				t.Errorf("%s × %s: the reason carries the payload: %s", tr.kind, g.name, rec.got[0].Reason)
			}
			if tr.kind == invoke.HTTPTrigger {
				var got struct{ Outputs map[string]map[string]any }
				if json.Unmarshal(reply, &got) != nil || got.Outputs["res"]["statusCode"] != float64(400) {
					t.Errorf("http × %s: reply %s, want res 400", g.name, reply)
				}
			}
		}
	}

	t.Run("a function's own decoding follows the same rule", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{}
		m := newMux(invoke.Options{Rejections: rec})
		m.Handle("f", invoke.ServiceBusTrigger, func(_ context.Context, r *invoke.Request) (invoke.Result, error) {
			_, err := r.ServiceBus("message")
			return invoke.Result{}, err
		})
		if res, body := invokeMux(t, m, "f", []byte(`{"Data": {"message": 12}}`)); res.StatusCode != http.StatusOK || len(rec.got) != 1 {
			t.Errorf("status %d, recorded %d; want 200 and a rejection; body %s", res.StatusCode, len(rec.got), body)
		}
	})
	t.Run("a rejection that cannot be recorded is retried", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{fail: errors.New("table storage is down")}
		m := newMux(invoke.Options{Rejections: rec})
		m.HandleTrigger("f", invoke.ServiceBusTrigger, "message", func(context.Context, *invoke.Request) (invoke.Result, error) {
			return invoke.Result{}, nil
		})
		if res, body := invokeMux(t, m, "f", []byte(`{"Data": {"message": 12}}`)); res.StatusCode != http.StatusInternalServerError || len(rec.got) != 1 {
			t.Errorf("status %d, recorded %d; want 500 so that the host retries; body %s", res.StatusCode, len(rec.got), body)
		}
	})
}

func TestMux_ReadinessAndForwarding(t *testing.T) {
	t.Parallel()
	m := newMux(invoke.Options{})
	m.Forward("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/panic" {
			panic("bad handler")
		}
		if _, ok := r.Context().Deadline(); !ok {
			t.Error("forwarded request has no deadline")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, `{"path":"`+r.URL.Path+`"}`)
	}))
	tests := []struct {
		method, path string
		want         int
		body         string
	}{
		{http.MethodGet, "/", http.StatusOK, `{"status":"ready"}`},
		{http.MethodGet, "/api/v1/health", http.StatusTeapot, `{"path":"/api/v1/health"}`},
		{http.MethodGet, "/api/panic", http.StatusInternalServerError, `{"error":"handler panicked"}`},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.want || rec.Body.String() != tt.body {
			t.Errorf("%s %s = %d %s, want %d %s", tt.method, tt.path, rec.Code, rec.Body, tt.want, tt.body)
		}
	}
}
