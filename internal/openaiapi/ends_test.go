package openaiapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// slowStack runs the app with a simulator slow enough to act on a batch
// while it runs: 1,000 lines take about seven seconds, in input order.
// window, if set, is the simulator's completion window.
func slowStack(t *testing.T, window time.Duration) *apptest.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	speed := 30.0
	return apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: &speed,
		Batch: aoaisim.BatchConfig{ValidationTime: aoaisim.Duration(time.Second), LinesPerMinute: 300, ShuffleWindow: 1,
			FinalizingTime: aoaisim.Duration(time.Second), CancellingTime: aoaisim.Duration(time.Second),
			CompletionWindow: aoaisim.Duration(window)}}})
}

// lineSet checks that every custom_id of the input is in exactly one of
// the files, and sums the usage of the lines Azure answered.
func lineSet(t *testing.T, prefix string, n int, files ...[]outputLine) (answered int, prompt, completion int64) {
	t.Helper()
	seen := map[string]int{}
	for _, f := range files {
		for _, l := range f {
			seen[l.CustomID]++
			if l.Response != nil {
				answered++
				prompt += l.Response.Body.Usage.PromptTokens
				completion += l.Response.Body.Usage.CompletionTokens
			}
		}
	}
	if len(seen) != n {
		t.Errorf("%d custom_ids in the files, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 || !strings.HasPrefix(id, prefix) {
			t.Errorf("custom_id %q appears %d times", id, k)
		}
	}
	return answered, prompt, completion
}

// TestOpenAIGo_CancelMidway: a batch cancelled while it runs ends
// cancelled; the lines done are in the output with their usage, billed
// exactly; the others are in the error file as cancelled.
func TestOpenAIGo_CancelMidway(t *testing.T) {
	t.Parallel()
	s := slowStack(t, 0)
	c := v1Client(s, "contoso")
	f, err := upload(t, c, "cancel.jsonl", jsonl(t, "x", 1000, nil))
	if err != nil {
		t.Fatal(describe(err))
	}
	b := await(t, c, create(t, c, f.ID).ID, func(b *openai.Batch) bool { return b.RequestCounts.Completed >= 50 })
	if b.Status != openai.BatchStatusInProgress {
		t.Errorf("running batch is %s", b.Status)
	}
	b, err = c.Batches.Cancel(t.Context(), b.ID)
	if err != nil {
		t.Fatal(describe(err))
	}
	if b.Status != openai.BatchStatusCancelling || b.CancellingAt == 0 {
		t.Errorf("cancel answered %s", b.Status)
	}
	b = await(t, c, b.ID, terminal)
	if b.Status != openai.BatchStatusCancelled || b.CancelledAt == 0 || b.RequestCounts.Completed >= 1000 ||
		b.RequestCounts.Completed+b.RequestCounts.Failed != 1000 {
		t.Fatalf("ended %s with %+v", b.Status, b.RequestCounts)
	}
	out, errs := download(t, c, b.OutputFileID), download(t, c, b.ErrorFileID)
	answered, prompt, completion := lineSet(t, "x-", 1000, out, errs)
	if int64(answered) != b.RequestCounts.Completed || len(out) != answered {
		t.Errorf("%d answered lines, %d in the output; the batch counts %d completed", answered, len(out), b.RequestCounts.Completed)
	}
	for _, l := range errs {
		if l.Error == nil || l.Error.Code != "batch_cancelled" {
			t.Errorf("error line %+v, want batch_cancelled", l)
			break
		}
	}
	if rows, p, cpl := jobLedger(t, s, "contoso", b.ID); rows != 1 || p != prompt || cpl != completion {
		t.Errorf("ledger: %d rows with %d/%d tokens; the output has %d/%d", rows, p, cpl, prompt, completion)
	}
}

// TestOpenAIGo_RefusedLineAndExpiry: a line the content filter refuses is
// in the error file with Azure's 400; a batch whose completion window
// ends while it runs is expired, its done lines in the output and the others in the
// error file as batch_expired.
func TestOpenAIGo_RefusedLineAndExpiry(t *testing.T) {
	t.Parallel()
	// The window ends after about 600 of the 1,000 lines.
	s := slowStack(t, 2*time.Minute)
	c := v1Client(s, "contoso")
	body := jsonl(t, "e", 1000, func(i int, l *inputLine) {
		if i == 0 {
			l.Body["messages"] = []map[string]string{{"role": "user", "content": "Please " + aoaisim.DefaultPromptTrigger}}
		}
	})
	f, err := upload(t, c, "expire.jsonl", body)
	if err != nil {
		t.Fatal(describe(err))
	}
	b := await(t, c, create(t, c, f.ID).ID, terminal)
	if b.Status != openai.BatchStatusExpired || b.ExpiredAt == 0 || b.RequestCounts.Failed < 1 {
		t.Fatalf("ended %s with %+v", b.Status, b.RequestCounts)
	}
	out, errs := download(t, c, b.OutputFileID), download(t, c, b.ErrorFileID)
	_, prompt, completion := lineSet(t, "e-", 1000, out, errs)
	refused, expired := 0, 0
	for _, l := range errs {
		switch {
		case l.CustomID == "e-0000" && l.Response != nil && l.Response.StatusCode == 400 && l.Response.Body.Error != nil && l.Response.Body.Error.Code == "content_filter":
			refused++
		case l.Response == nil && l.Error != nil && l.Error.Code == "batch_expired":
			expired++
		default:
			t.Errorf("error line %+v", l)
		}
	}
	if refused != 1 || expired == 0 || len(out)+refused+expired != 1000 {
		t.Errorf("%d output lines, %d refused, %d expired", len(out), refused, expired)
	}
	if rows, p, cpl := jobLedger(t, s, "contoso", b.ID); rows != 1 || p != prompt || cpl != completion {
		t.Errorf("ledger: %d rows with %d/%d tokens; the files have %d/%d", rows, p, cpl, prompt, completion)
	}
}
