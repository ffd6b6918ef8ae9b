package openaiapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/local/azurite"
)

// TestCopyLines_UnreadableIndex: a line whose custom_id the index cannot
// be read for is an error, not a line handed out with offpath's id; a
// line that is not one of the job's passes as it is.
func TestCopyLines_UnreadableIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, err := azblob.NewClientFromConnectionString(azurite.Start(t).ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := blobstore.New(client, blobstore.Options{})
	s := &Server{o: Options{Blobs: store, Containers: Containers{Results: "results"}}}
	ref, err := batchfile.NewRef("job1", 0, 0, "contoso", "ticket-1")
	if err != nil {
		t.Fatal(err)
	}
	put := func(name, content string) {
		t.Helper()
		w, err := store.Create(ctx, "results", name, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	foreign := `{"custom_id":"someone-else","response":{"status_code":200}}`
	put("ours.jsonl", `{"custom_id":"`+ref.String()+`","response":{"status_code":200}}`+"\n")
	put("foreign.jsonl", foreign+"\n")
	down := errors.New("storage down")
	run := func(blob string) (string, error) {
		idx := batchfile.NewIndexReader("job1", 0, func(int64) (io.ReadCloser, error) { return nil, down })
		var out bytes.Buffer
		bw := bufio.NewWriter(&out)
		err := s.copyLines(ctx, blob, idx, make([]bool, 1), func(int) bool { return true }, bw)
		bw.Flush()
		return out.String(), err
	}
	if got, err := run("ours.jsonl"); !errors.Is(err, down) || got != "" {
		t.Errorf("with the index unreadable: wrote %q, error %v; want nothing written and the storage error", got, err)
	}
	if got, err := run("foreign.jsonl"); err != nil || strings.TrimSpace(got) != foreign {
		t.Errorf("a foreign line: wrote %q, error %v; want it as it is", got, err)
	}
}
