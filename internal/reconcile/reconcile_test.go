package reconcile_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/monitor"
	"github.com/offpath/offpath/internal/reconcile"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/alerttest"
	"github.com/offpath/offpath/internal/testing/apptest"
)

var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	apptest.Cleanup()
	os.Exit(code)
}

const (
	resource  = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.CognitiveServices/accounts/aoai"
	chatDep   = "gpt-4o-mini"
	embedDep  = "text-embedding-3-small"
	batchDep  = "gpt-4o-mini-batch"
	tenantID  = "contoso"
	aliasName = "ingest"
)

// identity is a token credential holding the tokens the simulator's
// managed identity endpoint issues (the handler's credential asks the
// endpoint itself: internal/reconcile's end-to-end test).
type identity struct{ sim *aoaisim.Server }

func (i identity) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok, exp := i.sim.IssueToken(o.Scopes[0])
	return azcore.AccessToken{Token: tok, ExpiresOn: exp}, nil
}

// env is a simulator on a frozen clock at 10:05, its metrics read through
// the SDK, and a ledger on Azurite stamped by the same clock.
type env struct {
	t      *testing.T
	clock  *aoaisim.Clock
	sim    *aoaisim.Server
	oai    openai.Client
	ledger *tablestore.Ledger
	alerts *alerttest.Recorder
	rec    *reconcile.Reconciler
	opts   reconcile.Options
	svc    *aztables.ServiceClient
	hour   time.Time
	n      int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC), aoaisim.MetricsConfig{}, nil)
}

// newEnvWith is newEnv at hour (the clock at 5 past), the simulator's
// metrics shaped by shape, a Global Batch deployment on the simulator,
// and the reconciler's options changed by opts.
func newEnvWith(t *testing.T, hour time.Time, shape aoaisim.MetricsConfig, opts func(*reconcile.Options)) *env {
	t.Helper()
	e := &env{t: t, clock: aoaisim.NewClock(hour.Add(5*time.Minute), 0), alerts: &alerttest.Recorder{}, hour: hour}
	sim, err := aoaisim.New(aoaisim.Config{Clock: e.clock, Metrics: shape, Deployments: []aoaisim.Deployment{
		{Name: chatDep, Model: "gpt-4o-mini"}, {Name: embedDep, Model: "text-embedding-3-small"},
		{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e.sim = sim
	t.Cleanup(func() { _ = sim.Close() })
	ts := httptest.NewTLSServer(sim)
	t.Cleanup(ts.Close)
	e.oai = openai.NewClient(option.WithBaseURL(ts.URL+"/openai/v1/"), option.WithAPIKey(aoaisim.DefaultKey), option.WithHTTPClient(ts.Client()))
	metrics, err := monitor.New(identity{sim}, monitor.Config{ResourceID: resource, Endpoint: ts.URL, ClientOptions: azcore.ClientOptions{Transport: ts.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: shared.Get(t).ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	n := azurite.Suffix()
	e.ledger = tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: "rled" + n, Now: e.clock.Now})
	tenants := tablestore.NewTenants(svc, "rten"+n)
	if err := tenants.Create(context.Background(), tenant.New(tenantID, "Contoso", time.Now())); err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	e.opts = reconcile.Options{Metrics: metrics, Ledger: e.ledger, Tenants: tenants, Alerts: e.alerts,
		BatchDeployments: []string{batchDep}, Now: e.clock.Now}
	if opts != nil {
		opts(&e.opts)
	}
	e.rec, err = reconcile.New(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// call makes n embedding calls and one chat call and returns their usage.
func (e *env) calls(n int) (embed, chat ledger.Usage) {
	e.t.Helper()
	ctx := context.Background()
	for i := range n {
		r, err := e.oai.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: embedDep,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(fmt.Sprintf("chunk %d of the outage report", i))}})
		if err != nil {
			e.t.Fatal(err)
		}
		embed.PromptTokens += r.Usage.PromptTokens
		embed.Requests++
	}
	r, err := e.oai.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: chatDep, MaxTokens: openai.Int(30),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Summarise the outage report.")}})
	if err != nil {
		e.t.Fatal(err)
	}
	chat = ledger.Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, Requests: 1}
	return embed, chat
}

// meter records usage as the queue path does, under a unit of its own.
func (e *env) meter(dep string, u ledger.Usage) {
	e.t.Helper()
	e.n++
	en := ledger.Entry{Tenant: tenantID, Month: ledger.MonthOf(e.hour), Path: ledger.Queue, Unit: fmt.Sprintf("ingest:doc-%d@1#1", e.n),
		Alias: aliasName, Deployment: dep, Usage: u}
	if err := e.ledger.Record(context.Background(), en); err != nil {
		e.t.Fatal(err)
	}
}

// compare moves past the hour and its settling time, then reconciles it.
func (e *env) compare() map[string]reconcile.Period {
	e.t.Helper()
	e.clock.Advance(e.hour.Add(time.Hour + reconcile.DefaultSettle).Sub(e.clock.Now()))
	ps, err := e.rec.Run(context.Background())
	if err != nil {
		e.t.Fatalf("Run: %v", err)
	}
	out := map[string]reconcile.Period{}
	for _, p := range ps {
		if !p.From.Equal(e.hour) && p.Deployment != batchDep { // a batch deployment's is the day
			e.t.Errorf("period %+v, want the hour %v", p, e.hour)
		}
		out[p.Deployment] = p
	}
	return out
}

// TestReconcile: with every call metered, no drift; with calls made to the
// simulator's deployment directly, or an attempt's usage dropped from the
// ledger, ledger_drift names the deployment, the hour and both figures.
func TestReconcile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		traffic   func(e *env)
		wantDrift string // deployment, "" for none
	}{
		{"all through offpath", func(e *env) {
			for range 3 {
				embed, chat := e.calls(4)
				e.meter(embedDep, embed)
				e.meter(chatDep, chat)
			}
		}, ""},
		{"second door on the chat deployment", func(e *env) {
			embed, chat := e.calls(4)
			e.meter(embedDep, embed)
			e.meter(chatDep, chat)
			for range 20 {
				e.calls(0) // straight to the resource, metered by nobody
			}
		}, chatDep},
		{"an attempt's usage dropped", func(e *env) {
			embed, chat := e.calls(4)
			e.meter(embedDep, embed)
			e.meter(chatDep, chat)
			e.calls(40) // an attempt whose ledger row was never written
		}, embedDep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tt.traffic(e)
			got := e.compare()
			if len(got) != 2 {
				t.Fatalf("periods %+v, want both deployments", got)
			}
			for dep, p := range got {
				if p.Drift != (dep == tt.wantDrift) {
					t.Errorf("%s: ledger %+v, Azure %+v, drift %v; want drift %v", dep, p.Ledger, p.Azure, p.Drift, dep == tt.wantDrift)
				}
			}
			alerts := e.alerts.Named(reconcile.AlertDrift)
			if tt.wantDrift == "" {
				if len(alerts) != 0 {
					t.Errorf("alerts %+v, want none", alerts)
				}
				return
			}
			p := got[tt.wantDrift]
			if len(alerts) != 1 {
				t.Fatalf("alerts %+v, want one %s", alerts, reconcile.AlertDrift)
			}
			f := alerts[0].Fields
			if f["deployment"] != tt.wantDrift || f["from"] != e.hour.Format(time.RFC3339) || f["azure_prompt_tokens"] != p.Azure.Prompt ||
				f["ledger_prompt_tokens"] != p.Ledger.Prompt || f["likely_cause"] == "" || p.Azure.Total() <= p.Ledger.Total() {
				t.Errorf("alert fields %+v for period %+v", f, p)
			}
		})
	}
}

// TestReconcile_HoldsUntilFinal: a run compares the hour that ended Settle
// ago, never the hour still running, and Global Batch deployments only by
// day, at the day's last hour.
func TestReconcile_HoldsUntilFinal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	embed, _ := e.calls(2)
	e.meter(embedDep, embed)
	e.meter(batchDep, ledger.Usage{PromptTokens: 500, CompletionTokens: 50, Requests: 5}) // a harvest
	e.clock.Advance(time.Hour)                                                            // 11:05: 10:00 ended, not settled
	ps, err := e.rec.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !p.From.Before(e.hour) {
			t.Errorf("compared %+v before it settled", p)
		}
	}
	got := e.compare()
	if _, ok := got[batchDep]; ok {
		t.Errorf("the batch deployment compared by the hour: %+v", got[batchDep])
	}
	if p := got[embedDep]; p.Drift || p.Ledger.Prompt != embed.PromptTokens {
		t.Errorf("embedding hour %+v", p)
	}
	ps, err = e.rec.Compare(context.Background(), time.Date(2026, 11, 3, 23, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Deployment == batchDep && (!p.From.Equal(time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)) || p.Ledger.Prompt != 500 || !p.Drift) {
			t.Errorf("batch day %+v; want the day, 500 ledger tokens, and drift (the simulator never ran them)", p)
		}
	}
}
