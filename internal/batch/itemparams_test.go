package batch_test

import (
	"io"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/batch"
)

// TestSubmit_ItemParameters: an item's max_completion_tokens and
// temperature reach its line, the job's attributes are kept, and an item
// that sets both token limits, or a temperature out of range, is refused.
func TestSubmit_ItemParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	temp := 0.2
	job, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", Attributes: map[string]string{"door": "x"},
		Items: []batch.Item{{ID: "a", Prompt: "p", MaxCompletionTokens: 40, Temperature: &temp}, {ID: "b", Prompt: "q", MaxTokens: 9}}})
	if err != nil {
		t.Fatal(err)
	}
	if job.Attributes["door"] != "x" || job.EstimatedTokens < 49 {
		t.Errorf("job %+v", job)
	}
	body, _, err := e.blobs.Open(e.ctx(), e.cont.Inputs, job.Parts[0].InputBlob)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(body)
	body.Close()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"max_completion_tokens":40`) || !strings.Contains(lines[0], `"temperature":0.2`) ||
		strings.Contains(lines[0], `"max_tokens"`) || !strings.Contains(lines[1], `"max_tokens":9`) {
		t.Errorf("input lines:\n%s", b)
	}
	hot := 3.0
	for _, it := range []batch.Item{{ID: "c", Prompt: "p", MaxTokens: 1, MaxCompletionTokens: 1}, {ID: "d", Prompt: "p", Temperature: &hot}} {
		if _, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", Items: []batch.Item{it}}); err == nil {
			t.Errorf("item %+v accepted", it)
		}
	}
}
