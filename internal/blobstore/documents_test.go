package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/object"
)

// newStore returns Documents on the package's Azurite over a documents
// container and a results container of their own, the client and the
// documents container's name.
func newStore(t *testing.T, blockSize int) (*blobstore.Documents, *azblob.Client, string) {
	t.Helper()
	client, err := azblob.NewClientFromConnectionString(shared.Get(t).ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := azurite.Suffix()
	in := "incoming" + n
	if _, err := client.CreateContainer(context.Background(), in, nil); err != nil {
		t.Fatal(err)
	}
	return blobstore.NewDocuments(client, in, "ingested"+n, blockSize), client, in
}

func TestStore_OpenPinsTheVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, client, in := newStore(t, 0)
	if !strings.HasPrefix(s.AccountURL(), "http://127.0.0.1:") || strings.HasSuffix(s.AccountURL(), "/") {
		t.Errorf("AccountURL() = %q", s.AccountURL())
	}
	up, err := client.UploadBuffer(ctx, in, "acme/a.txt", []byte("first"), nil)
	if err != nil {
		t.Fatal(err)
	}
	etag := string(*up.ETag)
	props, err := s.Stat(ctx, "acme/a.txt")
	if err != nil || props.Size != 5 || strings.Trim(etag, `"`) != props.ETag {
		t.Fatalf("Stat = %+v, %v (upload ETag %s)", props, err, etag)
	}
	for _, tag := range []string{etag, strings.Trim(etag, `"`)} {
		r, p, err := s.Open(ctx, "acme/a.txt", tag)
		if err != nil {
			t.Fatalf("Open(%s) = %v", tag, err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if string(b) != "first" || p.Size != 5 {
			t.Errorf("Open(%s) read %q, %+v", tag, b, p)
		}
	}
	if _, err := client.UploadBuffer(ctx, in, "acme/a.txt", []byte("second"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open(ctx, "acme/a.txt", etag); !errors.Is(err, object.ErrChanged) {
		t.Errorf("Open(old ETag) = %v, want ErrChanged", err)
	}
	if _, _, err := s.Open(ctx, "acme/gone.txt", etag); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("Open(missing) = %v, want ErrNotFound", err)
	}
}

func TestWriter_VisibleOnlyWhenCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t, 1024)
	for _, tc := range []struct {
		name  string
		lines int
	}{{"small.jsonl", 3}, {"large.jsonl", 200}} {
		w := s.NewResult("acme/" + tc.name)
		var want bytes.Buffer
		want.WriteString("HEAD\n")
		for i := range tc.lines {
			line := []byte(strings.Repeat(string(rune('a'+i%26)), 40) + "\n")
			want.Write(line)
			if err := w.Write(ctx, line); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.Read(ctx, "acme/"+tc.name); !errors.Is(err, object.ErrNotFound) {
			t.Errorf("%s before Commit: %v, want ErrNotFound (nothing visible)", tc.name, err)
		}
		if err := w.Commit(ctx, []byte("HEAD\n"), "application/x-ndjson", map[string]string{"offpath_etag": "0x1"}); err != nil {
			t.Fatalf("%s: Commit = %v", tc.name, err)
		}
		got, p, err := s.Read(ctx, "acme/"+tc.name)
		if err != nil || !bytes.Equal(got, want.Bytes()) || p.Metadata["offpath_etag"] != "0x1" || p.ContentType != "application/x-ndjson" {
			t.Errorf("%s: Read = %d bytes (want %d), %+v, %v", tc.name, len(got), want.Len(), p, err)
		}
	}
	// A second result of the same name replaces the first whole.
	w := s.NewResult("acme/large.jsonl")
	if err := w.Write(ctx, []byte("only\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx, nil, "application/x-ndjson", nil); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Read(ctx, "acme/large.jsonl"); err != nil || string(got) != "only\n" {
		t.Errorf("replaced result = %q, %v", got, err)
	}
	if err := s.DeleteResult(ctx, "acme/large.jsonl"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteResult(ctx, "acme/large.jsonl"); err != nil {
		t.Errorf("Delete(missing) = %v, want nil", err)
	}
}

// TestStore_Redrop: the document is written again as a new version with
// the same bytes, content type and metadata, over several blocks; only
// from the version it names: a replaced blob is ErrChanged, a gone one
// ErrNotFound.
func TestStore_Redrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, client, in := newStore(t, 1024)
	data := bytes.Repeat([]byte("a line of the document\n"), 300) // several blocks of 1 KiB
	ct, corr := "text/markdown", "Z%C3%BCrich-0042"
	up, err := client.UploadBuffer(ctx, in, "acme/kb/a.md", data, &azblob.UploadBufferOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &ct}, Metadata: map[string]*string{"correlation_id": &corr}})
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Trim(string(*up.ETag), `"`)
	p, err := s.Redrop(ctx, "acme/kb/a.md", old)
	if err != nil || p.ETag == "" || p.ETag == old {
		t.Fatalf("Redrop = %+v, %v; want a new version", p, err)
	}
	r, got, err := s.Open(ctx, "acme/kb/a.md", p.ETag)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if !bytes.Equal(b, data) || got.ContentType != ct || got.Metadata["correlation_id"] != corr {
		t.Errorf("after Redrop: %d bytes (want %d), %+v", len(b), len(data), got)
	}
	if _, err := s.Redrop(ctx, "acme/kb/a.md", old); !errors.Is(err, object.ErrChanged) {
		t.Errorf("Redrop(old version) = %v, want ErrChanged", err)
	}
	if _, err := s.Redrop(ctx, "acme/kb/gone.md", old); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("Redrop(missing) = %v, want ErrNotFound", err)
	}
}
