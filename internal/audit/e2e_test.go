package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

// TestEndToEnd_SecondDoorThroughTheDevHost: someone creates a batch
// straight against the resource. The batch-audit timer, fired through the
// dev host, raises one alert; once the batch completes, its usage shows in
// the admin's usage report under "unattributed"; later runs raise nothing
// new and book nothing twice.
func TestEndToEnd_SecondDoorThroughTheDevHost(t *testing.T) {
	t.Parallel()
	speed := 600.0
	st := apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Speed: &speed, Batch: aoaisim.BatchConfig{LinesPerMinute: 600}}})
	ctx := context.Background()
	direct := openai.NewClient(option.WithBaseURL(st.SimURL+"/openai/v1/"), option.WithAPIKey(aoaisim.DefaultKey), option.WithMaxRetries(0),
		option.WithHTTPClient(st.SimClient))
	f, err := direct.Files.New(ctx, openai.FileNewParams{
		File: openai.File(strings.NewReader(input(12, batchDep)), "side-project.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	b, err := direct.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpoint("/chat/completions"),
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}

	st.Fire("batch-audit")
	a := st.WaitAlert(audit.AlertSecondDoor, "", time.Minute)
	if a.Fields["batch_id"] != b.ID || a.Fields["input_file_id"] != f.ID {
		t.Errorf("alert fields %+v: want batch %s on file %s", a.Fields, b.ID, f.ID)
	}
	if strings.Contains(a.Message, secret) {
		t.Error("the alert quotes the batch's prompts")
	}
	// What Application Insights gets from the batch-audit reply fires the
	// second-door rule.
	if tr := st.WaitRuleMatched("offpath-second-door", "invocation", time.Minute); tr.Function != "batch-audit" || strings.Contains(tr.Message, secret) {
		t.Errorf("the rule fired on %+v", tr)
	}

	// Wait for the batch to complete at the simulator, then audit until
	// its usage is booked.
	poll.Until(t, time.Minute, "the batch to complete at the simulator", func() bool {
		got, err := direct.Batches.Get(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == openai.BatchStatusCompleted && got.OutputFileID != ""
	})
	var usage ledger.ReportView
	deadline := time.Now().Add(time.Minute)
	for {
		st.FireAndWait("batch-audit")
		if code := st.DoAdmin("GET", "/api/v1/usage?tenant="+audit.Unattributed, nil, &usage); code == 200 && usage.Total.Requests > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no unattributed usage after the batch completed: %+v", usage)
		}
	}
	if usage.Total.Requests != 12 || usage.Total.Refusals != 2 || usage.Total.PromptTokens == 0 {
		t.Errorf("unattributed usage %+v; want 12 requests, 2 of them refused", usage.Total)
	}

	// Later runs: nothing new.
	st.FireAndWait("batch-audit")
	st.FireAndWait("batch-audit")
	if n := st.CountAlerts(audit.AlertSecondDoor, ""); n != 1 {
		t.Errorf("%d second_door alerts after four runs, want 1: %+v", n, st.Alerts())
	}
	entries, err := st.Ledger.Month(ctx, audit.Unattributed, ledger.MonthOf(time.Now()))
	if err != nil || len(entries) != 1 {
		t.Fatalf("unattributed ledger rows: %d, %v; want 1", len(entries), err)
	}
	if entries[0].PromptTokens != usage.Total.PromptTokens {
		t.Errorf("ledger row %+v vs the usage report %+v", entries[0].Usage, usage.Total)
	}
}
