package tokenmetrics_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/tokenmetrics"
)

const ikey = "11111111-2222-3333-4444-555555555555"

// ingestion stands in for Application Insights' ingestion endpoint: it
// takes newline-delimited envelopes on POST /v2.1/track and answers as
// the endpoint does.
type ingestion struct {
	mu        sync.Mutex
	envelopes []tokenmetrics.Envelope
	fail      bool
	requests  int
	// token, when set, is the bearer token every request must carry.
	token string
}

func (in *ingestion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.requests++
	if r.Method != http.MethodPost || r.URL.Path != "/v2.1/track" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if in.token != "" && r.Header.Get("Authorization") != "Bearer "+in.token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if in.fail {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var e tokenmetrics.Envelope
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		in.envelopes = append(in.envelopes, e)
		n++
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"itemsReceived": n, "itemsAccepted": n, "errors": []any{}})
}

func (in *ingestion) got() []tokenmetrics.Envelope {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]tokenmetrics.Envelope(nil), in.envelopes...)
}

func newSink(t *testing.T, in *ingestion) *tokenmetrics.AppInsights {
	t.Helper()
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	c, err := tokenmetrics.ParseConnectionString("InstrumentationKey=" + ikey + ";IngestionEndpoint=" + srv.URL + "/;LiveEndpoint=https://live.example/")
	if err != nil {
		t.Fatal(err)
	}
	a := tokenmetrics.NewAppInsights(tokenmetrics.AppInsightsOptions{Connection: c, Interval: time.Hour, Log: zerolog.Nop()})
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

func TestAppInsights_EnvelopesHaveAPIManagementsShape(t *testing.T) {
	t.Parallel()
	in := &ingestion{}
	a := newSink(t, in)
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	a.Emit(context.Background(), []ledger.Sample{{Time: at, Tenant: "contoso", Alias: "summarize", Deployment: "gpt-4o-mini",
		Path: ledger.Queue, Unfinished: true, PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}})
	a.Flush(context.Background())
	got := in.got()
	if len(got) != 3 {
		t.Fatalf("envelopes = %d, want 3 (one per metric)", len(got))
	}
	want := map[string]float64{"Prompt Tokens": 120, "Completion Tokens": 30, "Total Tokens": 150}
	for _, e := range got {
		if e.Name != "Microsoft.ApplicationInsights.11111111222233334444555555555555.Metric" || e.IKey != ikey || e.Time != "2026-11-03T10:00:00Z" {
			t.Errorf("envelope header = %q %q %q", e.Name, e.IKey, e.Time)
		}
		if e.Data.BaseType != "MetricData" || e.Data.BaseData.Ver != 2 || len(e.Data.BaseData.Metrics) != 1 {
			t.Fatalf("data = %+v", e.Data)
		}
		m := e.Data.BaseData.Metrics[0]
		if v, ok := want[m.Name]; !ok || v != m.Value || m.Count != 1 || m.Namespace != "API Management" || m.Kind != 0 {
			t.Errorf("metric = %+v", m)
		}
		delete(want, m.Name)
		p := e.Data.BaseData.Properties
		if p["Tenant"] != "contoso" || p["Alias"] != "summarize" || p["Deployment"] != "gpt-4o-mini" || p["Path"] != "queue" ||
			p["Source"] != "offpath" || p["Unfinished"] != "true" || len(p) > 10 {
			t.Errorf("dimensions = %v", p)
		}
	}
	if len(want) != 0 {
		t.Errorf("metrics missing: %v", want)
	}
}

func TestAppInsights_FailedSendIsLoggedNotFatal(t *testing.T) {
	t.Parallel()
	in := &ingestion{fail: true}
	var logs bytes.Buffer
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	c, _ := tokenmetrics.ParseConnectionString("InstrumentationKey=" + ikey + ";IngestionEndpoint=" + srv.URL)
	a := tokenmetrics.NewAppInsights(tokenmetrics.AppInsightsOptions{Connection: c, Interval: time.Hour,
		Log: zerolog.New(&syncWriter{w: &logs})})
	defer a.Close(context.Background())
	s := ledger.Sample{Time: time.Now(), Tenant: "contoso", Alias: "a", Deployment: "d", Path: ledger.Batch, PromptTokens: 1, TotalTokens: 1}
	a.Emit(context.Background(), []ledger.Sample{s})
	a.Flush(context.Background())
	if !strings.Contains(logs.String(), "not sent to Application Insights") || !strings.Contains(logs.String(), "503") {
		t.Errorf("log = %s", logs.String())
	}
	in.mu.Lock()
	in.fail = false
	in.mu.Unlock()
	a.Emit(context.Background(), []ledger.Sample{s})
	a.Flush(context.Background())
	if n := len(in.got()); n != 3 {
		t.Errorf("after recovery: %d envelopes, want 3", n)
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestParseConnectionString(t *testing.T) {
	t.Parallel()
	c, err := tokenmetrics.ParseConnectionString("InstrumentationKey=" + ikey)
	if err != nil || c.IngestionEndpoint != "https://dc.services.visualstudio.com/" {
		t.Errorf("default endpoint: %+v %v", c, err)
	}
	for _, bad := range []string{"", "IngestionEndpoint=https://x/", "InstrumentationKey=k;IngestionEndpoint=ftp://x", "InstrumentationKey=k;IngestionEndpoint=::"} {
		if _, err := tokenmetrics.ParseConnectionString(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestJSONLines_RoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	j := tokenmetrics.NewJSONLines(&buf, zerolog.Nop())
	in := []ledger.Sample{{Time: time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC), Tenant: "t", Alias: "a", Deployment: "d", Path: ledger.Queue,
		PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}, {Tenant: "u", Path: ledger.Batch, PromptTokens: -3, TotalTokens: -3}}
	j.Emit(context.Background(), in)
	out, err := tokenmetrics.ReadJSONLines(&buf)
	if err != nil || len(out) != 2 || out[0] != in[0] || out[1].PromptTokens != -3 {
		t.Errorf("round trip = %+v, %v", out, err)
	}
}

var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	apptest.Cleanup()
	os.Exit(code)
}

type fakeCredential struct{ scopes []string }

func (f *fakeCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	f.scopes = o.Scopes
	return azcore.AccessToken{Token: "entra-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestAppInsights_EntraToken(t *testing.T) {
	t.Parallel()
	in := &ingestion{token: "entra-token"}
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	c, _ := tokenmetrics.ParseConnectionString("InstrumentationKey=" + ikey + ";IngestionEndpoint=" + srv.URL)
	cred := &fakeCredential{}
	a := tokenmetrics.NewAppInsights(tokenmetrics.AppInsightsOptions{Connection: c, Interval: time.Hour, Credential: cred, Log: zerolog.Nop()})
	defer a.Close(context.Background())
	a.Emit(context.Background(), []ledger.Sample{{Time: time.Now(), Tenant: "t", Alias: "a", Deployment: "d", Path: ledger.Queue, PromptTokens: 1, TotalTokens: 1}})
	a.Flush(context.Background())
	if n := len(in.got()); n != 3 || len(cred.scopes) != 1 || cred.scopes[0] != "https://monitor.azure.com//.default" {
		t.Errorf("envelopes = %d, scopes = %v", n, cred.scopes)
	}
}
