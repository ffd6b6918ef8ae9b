package tokenmetrics_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
)

// The ledger's writes as the queue path, the batch harvest and the audit
// make them — running totals rewritten per model call, a final rewrite of
// the same totals, a re-harvest, a rewrite that lowers a row — reach
// Application Insights as changes, and the shipped query over them (with
// the gateway's own metrics beside them) sums to the ledger exactly.
func TestShippedQuery_SumsEqualTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := &ingestion{}
	sink := newSink(t, in)
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: shared.Get(t).ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	led := tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: "tokenmetrics" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10), Metrics: sink})
	month := ledger.MonthOf(time.Now())
	entry := func(tenant string, path ledger.Path, unit, dep string, p, c int64, unfinished bool) ledger.Entry {
		return ledger.Entry{Tenant: tenant, Month: month, Path: path, Unit: unit, Alias: "summarize", Deployment: dep,
			Usage: ledger.Usage{PromptTokens: p, CompletionTokens: c, Requests: 1}, Unfinished: unfinished}
	}
	batch := func(es ...ledger.Entry) {
		t.Helper()
		if err := led.RecordBatch(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	one := func(e ledger.Entry) {
		t.Helper()
		if err := led.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// A queue delivery that crashed after three calls: its running totals.
	batch(entry("contoso", ledger.Queue, "doc#1", "emb", 100, 0, true))
	batch(entry("contoso", ledger.Queue, "doc#1", "emb", 100, 0, true), entry("contoso", ledger.Queue, "doc#1", "chat", 200, 50, true))
	batch(entry("contoso", ledger.Queue, "doc#1", "emb", 100, 0, true), entry("contoso", ledger.Queue, "doc#1", "chat", 300, 80, true))
	// The redelivery finishes it: its calls, then its final meter (the same totals).
	batch(entry("contoso", ledger.Queue, "doc#2", "emb", 100, 0, true), entry("contoso", ledger.Queue, "doc#2", "chat", 310, 70, true))
	batch(entry("contoso", ledger.Queue, "doc#2", "emb", 100, 0, false), entry("contoso", ledger.Queue, "doc#2", "chat", 310, 70, false))
	// A batch part harvested twice, then rewritten lower; another tenant's part.
	one(entry("contoso", ledger.Batch, "job/part-0", "batch", 1000, 400, false))
	one(entry("contoso", ledger.Batch, "job/part-0", "batch", 1000, 400, false))
	one(entry("contoso", ledger.Batch, "job/part-0", "batch", 900, 400, false))
	one(entry("fabrikam", ledger.Batch, "job2/part-0", "batch", 70, 7, false))
	// The audit books an orphan batch to unattributed.
	one(entry("unattributed", ledger.Batch, "orphan", "batch", 50, 5, false))
	sink.Flush(ctx)

	var rows []row
	for _, e := range in.got() {
		m := e.Data.BaseData.Metrics[0]
		rows = append(rows, row{name: m.Name, valueSum: m.Value * float64(m.Count), dimensions: e.Data.BaseData.Properties, columns: map[string]string{}})
	}
	// The gateway's own, as API Management emits them: pre-aggregated,
	// the team in its Subscription ID, no Path; and one unrelated metric.
	for name, v := range map[string]float64{"Prompt Tokens": 40, "Completion Tokens": 2, "Total Tokens": 42, "Requests": 9} {
		rows = append(rows, row{name: name, valueSum: v, dimensions: map[string]string{"Subscription ID": "contoso", "API ID": "chat"}, columns: map[string]string{}})
	}
	query, err := os.ReadFile("../../infra/queries/tokens-by-team.kql")
	if err != nil {
		t.Fatal(err)
	}
	sums, err := runKQL(string(query), rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"contoso", "fabrikam", "unattributed"} {
		entries, err := led.Month(ctx, tenant, month)
		if err != nil {
			t.Fatal(err)
		}
		want := map[ledger.Path]ledger.Usage{}
		for _, e := range entries {
			u := want[e.Path]
			u.Add(e.Usage)
			want[e.Path] = u
		}
		for _, p := range []ledger.Path{ledger.Queue, ledger.Batch} {
			key := tenant + "|" + string(p) + "|"
			w := want[p]
			if got := sums[key+"Prompt Tokens"]; got != float64(w.PromptTokens) {
				t.Errorf("%s prompt = %v, ledger %d", key, got, w.PromptTokens)
			}
			if got := sums[key+"Completion Tokens"]; got != float64(w.CompletionTokens) {
				t.Errorf("%s completion = %v, ledger %d", key, got, w.CompletionTokens)
			}
			if got := sums[key+"Total Tokens"]; got != float64(w.TotalTokens()) {
				t.Errorf("%s total = %v, ledger %d", key, got, w.TotalTokens())
			}
		}
	}
	if got := sums["contoso|sync|Total Tokens"]; got != 42 {
		t.Errorf("gateway total = %v, want 42", got)
	}
	if _, ok := sums["contoso|sync|Requests"]; ok {
		t.Error("the query summed a metric that is not a token metric")
	}
	// Rewrites of unchanged totals send nothing: 3 queue changes for doc#1
	// (emb, chat, chat), 2 for doc#2, 2 for the contoso part, 1 each for
	// the others; three metrics each.
	if n := len(in.got()); n != 3*(3+2+2+1+1) {
		t.Errorf("envelopes = %d, want %d", n, 3*9)
	}
}

// The workbook shipped in the infra runs the shipped query, not a copy
// that drifted from it.
func TestWorkbook_RunsTheShippedQuery(t *testing.T) {
	t.Parallel()
	query, err := os.ReadFile("../../infra/queries/tokens-by-team.kql")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.SplitSeq(string(query), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
			lines = append(lines, l)
		}
	}
	b, err := os.ReadFile("../../infra/workbooks/tokens-by-team.workbook.json")
	if err != nil {
		t.Fatal(err)
	}
	var wb struct {
		Version string `json:"version"`
		Items   []struct {
			Type    int `json:"type"`
			Content struct {
				Query                    string `json:"query"`
				ResourceType             string `json:"resourceType"`
				TimeContextFromParameter string `json:"timeContextFromParameter"`
			} `json:"content"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &wb); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, it := range wb.Items {
		if it.Type != 3 { // a query item
			continue
		}
		found++
		if it.Content.Query != strings.Join(lines, "\n") || it.Content.ResourceType != "microsoft.insights/components" || it.Content.TimeContextFromParameter != "TimeRange" {
			t.Errorf("workbook query item = %+v", it.Content)
		}
	}
	if wb.Version != "Notebook/1.0" || found != 1 {
		t.Errorf("workbook version %q with %d query items", wb.Version, found)
	}
}
