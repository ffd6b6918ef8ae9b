package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/reconcile"
)

// TestReconcile_Period: with a period of a minute, each minute is compared
// on its own (its calls, not its neighbours'), a run compares the minute
// that ended Settle ago, and a period that is not one of Periods is
// refused.
func TestReconcile_Period(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC), aoaisim.MetricsConfig{}, func(o *reconcile.Options) {
		o.Period, o.Settle = time.Minute, 30*time.Second
	})
	ctx := context.Background()
	embed, chat := e.calls(3) // 10:05, through offpath
	e.meter(embedDep, embed)
	e.meter(chatDep, chat)
	e.clock.Advance(2 * time.Minute) // 10:07: a second door on the chat deployment
	for range 20 {
		e.calls(0)
	}
	at := func(m int) time.Time { return e.hour.Add(time.Duration(m) * time.Minute) }

	ps, err := e.rec.Compare(ctx, at(5))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("10:05 compared as %+v, want both deployments", ps)
	}
	for _, p := range ps {
		if p.Drift || !p.From.Equal(at(5)) || !p.To.Equal(at(6)) || p.Azure != p.Ledger {
			t.Errorf("10:05: %+v, want 10:05-10:06 with the ledger equal to Azure", p)
		}
	}
	e.clock.Advance(90 * time.Second) // 10:08:30: 10:07 ended more than Settle ago
	ps, err = e.rec.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Deployment != chatDep || !ps[0].From.Equal(at(7)) || !ps[0].Drift || ps[0].Ledger != (reconcile.Tokens{}) {
		t.Errorf("the run at 10:08:30 compared %+v, want 10:07's chat deployment, drifting, nothing in the ledger", ps)
	}
	if a := e.alerts.Named(reconcile.AlertDrift); len(a) != 1 || a[0].Fields["from"] != at(7).Format(time.RFC3339) || a[0].Fields["to"] != at(8).Format(time.RFC3339) {
		t.Errorf("alerts %+v, want one for 10:07-10:08", a)
	}

	for _, bad := range []time.Duration{2 * time.Minute, 24 * time.Hour, -time.Hour} {
		o := e.opts
		o.Period = bad
		if _, err := reconcile.New(o); err == nil || !strings.Contains(err.Error(), "period") {
			t.Errorf("New with period %v: %v, want refused", bad, err)
		}
	}
	o := e.opts
	o.Batch = "hourly"
	if _, err := reconcile.New(o); err == nil {
		t.Error("New with batch mode \"hourly\": accepted")
	}
}

// TestReconcile_GlobalBatch runs Global Batch lines on the simulator and
// books their harvest in the ledger, then compares the day under each of
// the simulator's two metric shapes (Global Batch counted, or left out:
// "exclude_global_batch") and each batch mode: "day" compares the batch
// deployment over the UTC day at its last hour, equal when the metrics
// count batch lines and drifting ("offpath metered more") when they do
// not; "skip" never compares it, whichever the metrics do.
func TestReconcile_GlobalBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exclude   bool
		mode      reconcile.BatchMode
		compared  bool
		wantDrift bool
	}{
		{false, reconcile.BatchByDay, true, false},
		{true, reconcile.BatchByDay, true, true},
		{true, reconcile.BatchSkip, false, false},
		{false, reconcile.BatchSkip, false, false},
	} {
		t.Run(fmt.Sprintf("exclude_global_batch=%v,%s", tc.exclude, tc.mode), func(t *testing.T) {
			t.Parallel()
			day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
			e := newEnvWith(t, day.Add(23*time.Hour), aoaisim.MetricsConfig{ExcludeGlobalBatch: tc.exclude}, func(o *reconcile.Options) { o.Batch = tc.mode })
			usage := e.runBatch(12)
			e.n++
			if err := e.ledger.Record(context.Background(), ledger.Entry{Tenant: tenantID, Month: ledger.MonthOf(day), Path: ledger.Batch,
				Unit: fmt.Sprintf("batch:job-%d#0", e.n), Alias: "summarize", Deployment: batchDep, Usage: usage}); err != nil {
				t.Fatal(err)
			}
			embed, _ := e.calls(2) // 23:xx, through offpath
			e.meter(embedDep, embed)
			got := e.compare()
			p, ok := got[batchDep]
			if ok != tc.compared {
				t.Fatalf("batch deployment compared: %v (%+v), want %v", ok, p, tc.compared)
			}
			if p := got[embedDep]; p.Drift || p.Ledger.Prompt != embed.PromptTokens {
				t.Errorf("the embedding deployment's hour: %+v", p)
			}
			alerts := e.alerts.Named(reconcile.AlertDrift)
			if !tc.compared {
				if len(alerts) != 0 {
					t.Errorf("alerts %+v, want none", alerts)
				}
				return
			}
			if !p.From.Equal(day) || !p.To.Equal(day.Add(24*time.Hour)) || p.Ledger.Prompt != usage.PromptTokens || p.Ledger.Completion != usage.CompletionTokens {
				t.Errorf("batch period %+v, want the whole day with the harvest's %d/%d tokens", p, usage.PromptTokens, usage.CompletionTokens)
			}
			if want := (reconcile.Tokens{Prompt: usage.PromptTokens, Completion: usage.CompletionTokens}); !tc.exclude && p.Azure != want {
				t.Errorf("Azure counted %+v, want the lines' %+v", p.Azure, want)
			}
			if p.Drift != tc.wantDrift || len(alerts) != map[bool]int{false: 0, true: 1}[tc.wantDrift] {
				t.Fatalf("drift %v, alerts %+v; want drift %v", p.Drift, alerts, tc.wantDrift)
			}
			if tc.wantDrift && !strings.HasPrefix(fmt.Sprint(alerts[0].Fields["likely_cause"]), "offpath metered more") {
				t.Errorf("cause %v", alerts[0].Fields["likely_cause"])
			}
		})
	}
}

// runBatch runs a Global Batch job of n chat lines on the simulator to
// its end (moving the clock a minute at a time) and returns the usage its
// lines reported, as the harvest books it.
func (e *env) runBatch(n int) ledger.Usage {
	e.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for i := range n {
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprintf("t-%d", i), "method": "POST", "url": "/v1/chat/completions",
			"body": map[string]any{"model": batchDep, "max_tokens": 20, "messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("Summarise ticket %d: the printer prints blank pages.", i)}}}})
		b.Write(line)
		b.WriteByte('\n')
	}
	f, err := e.oai.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(b.String()), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		e.t.Fatal(err)
	}
	job, err := e.oai.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		e.t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for job.Status != openai.BatchStatusCompleted {
		if job.Status == openai.BatchStatusFailed || time.Now().After(deadline) {
			e.t.Fatalf("batch %s: %s %+v", job.ID, job.Status, job.Errors)
		}
		e.clock.Advance(time.Minute)
		if job, err = e.oai.Batches.Get(ctx, job.ID); err != nil {
			e.t.Fatal(err)
		}
	}
	out, err := e.oai.Files.Content(ctx, job.OutputFileID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer out.Body.Close()
	u := ledger.Usage{}
	dec := json.NewDecoder(out.Body)
	for dec.More() {
		var line struct {
			Response struct {
				Body struct {
					Usage struct {
						PromptTokens     int64 `json:"prompt_tokens"`
						CompletionTokens int64 `json:"completion_tokens"`
					} `json:"usage"`
				} `json:"body"`
			} `json:"response"`
		}
		if err := dec.Decode(&line); err != nil {
			e.t.Fatal(err)
		}
		u.PromptTokens += line.Response.Body.Usage.PromptTokens
		u.CompletionTokens += line.Response.Body.Usage.CompletionTokens
		u.Requests++
	}
	if u.Requests != int64(n) || u.PromptTokens == 0 {
		e.t.Fatalf("batch output: %+v, want %d lines", u, n)
	}
	return u
}
