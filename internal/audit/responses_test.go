package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

// A batch of the Responses API created behind offpath's back is metered
// like a chat batch: a completion the filter stopped (status incomplete,
// incomplete_details.reason content_filter) is a refusal billed with its
// tokens, a filtered prompt a refusal with none. The expected figures are
// read from the output through openai-go's own response type.
func TestRun_DirectResponsesBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const lines = 6
	var in strings.Builder
	for i := range lines {
		p := fmt.Sprintf("%s: ticket %d, the printer is on fire again", secret, i)
		switch i {
		case 1:
			p += " " + aoaisim.DefaultPromptTrigger
		case 2:
			p += " " + aoaisim.DefaultCompletionTrigger
		}
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprintf("r-%d", i), "method": "POST", "url": "/v1/responses",
			"body": map[string]any{"model": batchDep, "instructions": "Summarise.", "max_output_tokens": 40, "input": p}})
		in.Write(line)
		in.WriteByte('\n')
	}
	f := e.upload("responses.jsonl", in.String())
	direct, err := e.direct.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: f.ID,
		Endpoint: openai.BatchNewParamsEndpointV1Responses, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	if s := e.run(); s.Alerted != 1 || s.Unknown != 1 {
		t.Fatalf("first run: %+v", s)
	}
	b := e.finish(direct.ID)

	var prompt, completion, requests, refusals, incomplete int64
	for _, id := range []string{b.OutputFileID, b.ErrorFileID} {
		if id == "" {
			continue
		}
		res, err := e.direct.Files.Content(context.Background(), id)
		if err != nil {
			t.Fatalf("Files.Content: %v", err)
		}
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			var l struct {
				Response struct {
					StatusCode int             `json:"status_code"`
					Body       json.RawMessage `json:"body"`
				} `json:"response"`
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			requests++
			if l.Response.StatusCode == 400 {
				refusals++ // the prompt filter: content_filter, nothing billed
				continue
			}
			var r responses.Response
			if err := json.Unmarshal(l.Response.Body, &r); err != nil {
				t.Fatal(err)
			}
			if r.Status == responses.ResponseStatusIncomplete && r.IncompleteDetails.Reason == "content_filter" {
				refusals++
				incomplete++
			}
			prompt += r.Usage.InputTokens
			completion += r.Usage.OutputTokens
		}
		res.Body.Close()
	}
	if requests != lines || refusals != 2 || incomplete != 1 || completion == 0 {
		t.Fatalf("the simulator's output: %d requests, %d refusals (%d incomplete), %d output tokens", requests, refusals, incomplete, completion)
	}

	if s := e.run(); s.Booked != 1 || s.Errors != 0 {
		t.Fatalf("run after the batch ended: %+v", s)
	}
	rows := e.unattributed()
	if len(rows) != 1 {
		t.Fatalf("%d unattributed rows, want 1: %+v", len(rows), rows)
	}
	u := rows[0].Usage
	if rows[0].Unit != audit.LedgerUnit(direct.ID) || u.PromptTokens != prompt || u.CompletionTokens != completion || u.Requests != requests || u.Refusals != refusals {
		t.Errorf("booked %+v, want prompt %d, completion %d, requests %d, refusals %d", u, prompt, completion, requests, refusals)
	}
}
