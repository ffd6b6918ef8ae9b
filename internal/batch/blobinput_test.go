package batch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/batch"
)

// TestSubmit_InputBlob: a corpus is refused when it is missing or larger
// than MaxInputBytes, with nothing left behind, and read when it fits.
func TestSubmit_InputBlob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(0), tweak: func(o *batch.Options) { o.MaxInputBytes = 200 }})
	put := func(name, body string) {
		w, err := e.blobs.Create(context.Background(), e.cont.Uploads, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	line := `{"id":"a","prompt":"hello"}` + "\n"
	put("contoso/small.jsonl", line)
	put("contoso/big.jsonl", strings.Repeat(line, 10))
	for _, tt := range []struct{ blob, code string }{{"contoso/big.jsonl", "too_large"}, {"contoso/none.jsonl", "input_blob_not_found"}} {
		_, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", InputBlob: tt.blob})
		var ie *batch.InvalidError
		if !errors.As(err, &ie) || ie.Code != tt.code {
			t.Errorf("Submit of %s = %v, want %s", tt.blob, err, tt.code)
		}
	}
	j, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", InputBlob: "contoso/small.jsonl"})
	if err != nil || j.Items != 1 {
		t.Fatalf("Submit of a corpus that fits: %v, %d items", err, j.Items)
	}
	if jobs, err := e.jobs.List(context.Background(), "contoso", "", "", 10); err != nil || len(jobs) != 1 {
		t.Errorf("jobs after two refusals and one submission: %d, %v; want 1", len(jobs), err)
	}
}
