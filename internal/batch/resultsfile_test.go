package batch_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
)

// TestResults_StoredCompressedReadPlain: a harvest stores its results
// compressed and the results API reads them as JSON lines; a job
// harvested before compression, whose results file is plain JSON lines,
// reads the same; a damaged file is an error, never fewer results.
func TestResults_StoredCompressedReadPlain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	j := e.submit("contoso", items(6, "t"))
	j = e.pollUntil(20*time.Second, harvested, j.ID)[j.ID]
	want := e.check(j, map[batch.Outcome]int{batch.OK: 6})

	ctx := context.Background()
	name := j.Parts[0].ResultsBlob
	body, _, err := e.blobs.Open(ctx, e.cont.Results, name)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(stored))
	if err != nil || !strings.HasSuffix(name, ".jsonl.gz") {
		t.Fatalf("results file %s: %v; want gzip under a .jsonl.gz name", name, err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	put := func(b []byte) {
		t.Helper()
		w, err := e.blobs.Create(ctx, e.cont.Results, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}

	put(plain)
	got, _ := json.Marshal(e.results(j))
	if w, _ := json.Marshal(want); !bytes.Equal(got, w) {
		t.Fatalf("a plain results file reads\n%s\nwant\n%s", got, w)
	}

	put(stored[:len(stored)-10])
	r, _, _, err := e.svc.Results(ctx, j.Tenant, j.ID)
	if err == nil {
		_, err = io.ReadAll(r)
		r.Close()
	}
	if err == nil {
		t.Fatal("a truncated results file read without an error")
	}
}
