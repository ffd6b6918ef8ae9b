package batch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

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

// TestSubmit_PartBlocks: Submit stages a job's input part in blocks that
// grow with the input, a thirty-second of it in whole MiB: a 36 MB corpus
// is written in blocks of 2 MiB, not the store's 1 MiB.
func TestSubmit_PartBlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(0)})
	ctx := context.Background()
	w, err := e.blobs.Create(ctx, e.cont.Uploads, "contoso/corpus.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	prompt := strings.Repeat("The printer on floor three is on fire again. ", 30)
	for i := range 26_000 {
		fmt.Fprintf(w, `{"id":"doc-%d","prompt":"%s"}`+"\n", i, prompt)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	defer e.blobs.Delete(ctx, e.cont.Uploads, "contoso/corpus.jsonl")
	if w.Size() <= 32<<20 || w.Size() > 64<<20 {
		t.Fatalf("corpus of %d bytes, want more than 32 MiB and at most 64", w.Size())
	}
	j, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", InputBlob: "contoso/corpus.jsonl"})
	if err != nil || len(j.Parts) != 1 {
		t.Fatalf("Submit: %v (%d parts)", err, len(j.Parts))
	}
	defer e.blobs.DeletePrefix(ctx, e.cont.Inputs, "contoso/"+j.ID+"/")
	raw, err := azblob.NewClientFromConnectionString(sharedAzurite(t).ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes := committedBlocks(t, raw, e.cont.Inputs, j.Parts[0].InputBlob)
	const want = 2 << 20
	var sum int64
	for i, n := range sizes {
		if i < len(sizes)-1 && n != want {
			t.Errorf("block %d holds %d bytes, want %d", i, n, want)
		}
		sum += n
	}
	if len(sizes) < 2 || sum != j.Parts[0].Bytes {
		t.Errorf("%d blocks of %d bytes in all, want at least 2 holding the part's %d", len(sizes), sum, j.Parts[0].Bytes)
	}
}

// committedBlocks returns the sizes of a blob's committed blocks, in order.
func committedBlocks(tb testing.TB, raw *azblob.Client, containerName, name string) []int64 {
	tb.Helper()
	list, err := raw.ServiceClient().NewContainerClient(containerName).NewBlockBlobClient(name).
		GetBlockList(context.Background(), blockblob.BlockListTypeCommitted, nil)
	if err != nil {
		tb.Fatalf("block list of %s: %v", name, err)
	}
	sizes := make([]int64, len(list.CommittedBlocks))
	for i, b := range list.CommittedBlocks {
		sizes[i] = *b.Size
	}
	return sizes
}
