package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/object"
)

// blobStore is a Blobs with what the suite does around it: a document
// uploaded (returning its ETag) or deleted as its uploader would, and a
// result read back (object.ErrNotFound if there is none).
type blobStore struct {
	ingest.Blobs
	upload func(t *testing.T, name string, data []byte, contentType string, meta map[string]string) string
	remove func(t *testing.T, name string)
	result func(t *testing.T, name string) ([]byte, object.Info, error)
}

// TestBlobs_Contract runs one suite against the flow tests' in-memory
// blobs and blobstore's Documents on Azurite.
func TestBlobs_Contract(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) blobStore{
		"memory": func(*testing.T) blobStore {
			b := newMemBlobs()
			return blobStore{Blobs: b,
				upload: func(_ *testing.T, name string, data []byte, ct string, meta map[string]string) string {
					return b.store(name, memBlob{data: data, size: int64(len(data)), contentType: ct, meta: meta})
				},
				remove: func(_ *testing.T, name string) { b.remove(name) },
				result: func(_ *testing.T, name string) ([]byte, object.Info, error) { return b.read(name) },
			}
		},
		"blobstore": func(t *testing.T) blobStore {
			ctx := context.Background()
			client, err := azblob.NewClientFromConnectionString(shared.Get(t).ConnectionString(), nil)
			if err != nil {
				t.Fatal(err)
			}
			// Containers of its own in the shared Azurite.
			if _, err := client.CreateContainer(ctx, "contract-incoming", nil); err != nil {
				t.Fatal(err)
			}
			d := blobstore.NewDocuments(client, "contract-incoming", "contract-results", 1024) // small blocks: results and redrops span several
			return blobStore{Blobs: d,
				upload: func(t *testing.T, name string, data []byte, ct string, meta map[string]string) string {
					o := &azblob.UploadBufferOptions{Metadata: map[string]*string{}}
					if ct != "" {
						o.HTTPHeaders = &blob.HTTPHeaders{BlobContentType: &ct}
					}
					for k, v := range meta {
						o.Metadata[k] = &v
					}
					up, err := client.UploadBuffer(ctx, "contract-incoming", name, data, o)
					if err != nil {
						t.Fatal(err)
					}
					return strings.Trim(string(*up.ETag), `"`)
				},
				remove: func(t *testing.T, name string) {
					if _, err := client.DeleteBlob(ctx, "contract-incoming", name, nil); err != nil {
						t.Fatal(err)
					}
				},
				result: func(_ *testing.T, name string) ([]byte, object.Info, error) { return d.Read(ctx, name) },
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			blobsContract(t, open(t))
		})
	}
}

func blobsContract(t *testing.T, s blobStore) {
	ctx := context.Background()
	const name, gone = "acme/kb/a.md", "acme/kb/gone.md"

	// A missing document is ErrNotFound to every call that names it.
	if _, err := s.Stat(ctx, gone); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("Stat(missing) = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Open(ctx, gone, "0x8D1"); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("Open(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.Redrop(ctx, gone, "0x8D1"); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("Redrop(missing) = %v, want ErrNotFound", err)
	}

	// Stat and Open describe the document alike: its version without
	// quotes, size, content type and metadata, whose keys read lower case.
	data := bytes.Repeat([]byte("a line of the document\n"), 300) // several blocks of 1 KiB
	meta := map[string]string{"Correlation_ID": "Z%C3%BCrich-0042"}
	want := object.Info{Size: int64(len(data)), ContentType: "text/markdown", Metadata: map[string]string{"correlation_id": "Z%C3%BCrich-0042"}}
	old := s.upload(t, name, data, "text/markdown", meta)
	want.ETag = old
	if got, err := s.Stat(ctx, name); err != nil || !sameInfo(got, want) {
		t.Errorf("Stat = %+v, %v; want %+v", got, err, want)
	}
	for _, tag := range []string{old, `"` + old + `"`} {
		b, got, err := readAll(s.Open(ctx, name, tag))
		if err != nil || !bytes.Equal(b, data) || !sameInfo(got, want) {
			t.Errorf("Open(%s) = %d bytes (want %d), %+v, %v; want %+v", tag, len(b), len(data), got, err, want)
		}
	}

	// A document uploaded without a content type has the service's.
	bare := s.upload(t, "acme/bare", []byte("no type"), "", nil)
	if got, err := s.Stat(ctx, "acme/bare"); err != nil || got.ETag != bare || got.ContentType != "application/octet-stream" || len(got.Metadata) != 0 {
		t.Errorf("Stat of a document uploaded bare = %+v, %v; want application/octet-stream, no metadata", got, err)
	}

	// Redrop writes the same bytes, content type and metadata as a new
	// version, only from the version it names.
	p, err := s.Redrop(ctx, name, `"`+old+`"`)
	if err != nil || p.ETag == "" || p.ETag == old || p.Size != want.Size || p.ContentType != want.ContentType || !maps.Equal(p.Metadata, want.Metadata) {
		t.Fatalf("Redrop = %+v, %v; want a new version of %+v", p, err, want)
	}
	want.ETag = p.ETag
	if got, err := s.Stat(ctx, name); err != nil || !sameInfo(got, want) {
		t.Errorf("Stat after Redrop = %+v, %v; want %+v", got, err, want)
	}
	if b, got, err := readAll(s.Open(ctx, name, p.ETag)); err != nil || !bytes.Equal(b, data) || !sameInfo(got, want) {
		t.Errorf("Open after Redrop = %d bytes (want %d), %+v, %v; want %+v", len(b), len(data), got, err, want)
	}
	if _, err := s.Redrop(ctx, name, old); !errors.Is(err, object.ErrChanged) {
		t.Errorf("Redrop(the replaced version) = %v, want ErrChanged", err)
	}

	// A document replaced since is ErrChanged at its old version; one
	// deleted since is ErrNotFound.
	newer := s.upload(t, name, []byte("# a newer version"), "text/markdown", nil)
	if _, _, err := s.Open(ctx, name, p.ETag); !errors.Is(err, object.ErrChanged) {
		t.Errorf("Open(the replaced version) = %v, want ErrChanged", err)
	}
	if b, _, err := readAll(s.Open(ctx, name, newer)); err != nil || string(b) != "# a newer version" {
		t.Errorf("Open(the newer version) = %q, %v", b, err)
	}
	s.remove(t, name)
	if _, _, err := s.Open(ctx, name, newer); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("Open(a deleted document) = %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(ctx, name); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("Stat(a deleted document) = %v, want ErrNotFound", err)
	}

	// A result is visible only once committed, head first, with its
	// content type and metadata; a second one replaces it whole.
	const res = "acme/kb/a.md.jsonl"
	w := s.NewResult(res)
	var body bytes.Buffer
	body.WriteString("HEAD\n")
	for i := range 100 {
		line := []byte(strings.Repeat(string(rune('a'+i%26)), 40) + "\n")
		body.Write(line)
		if err := w.Write(ctx, line); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.result(t, res); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("result before Commit: %v, want ErrNotFound (nothing visible)", err)
	}
	md := map[string]string{"offpath_etag": old}
	if err := w.Commit(ctx, []byte("HEAD\n"), ingest.ResultContentType, md); err != nil {
		t.Fatal(err)
	}
	if b, got, err := s.result(t, res); err != nil || !bytes.Equal(b, body.Bytes()) || got.ContentType != ingest.ResultContentType || !maps.Equal(got.Metadata, md) {
		t.Errorf("result = %d bytes (want %d), %+v, %v", len(b), body.Len(), got, err)
	}
	w = s.NewResult(res)
	if err := w.Write(ctx, []byte("only\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx, nil, ingest.ResultContentType, nil); err != nil {
		t.Fatal(err)
	}
	if b, got, err := s.result(t, res); err != nil || string(b) != "only\n" || len(got.Metadata) != 0 {
		t.Errorf("replaced result = %q, %+v, %v; want only the second, without the first's metadata", b, got, err)
	}

	// DeleteResult removes it, and a missing one is no error.
	for range 2 {
		if err := s.DeleteResult(ctx, res); err != nil {
			t.Errorf("DeleteResult = %v", err)
		}
	}
	if _, _, err := s.result(t, res); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("result after DeleteResult: %v, want ErrNotFound", err)
	}
}

// sameInfo compares descriptions, no metadata and empty metadata alike.
func sameInfo(a, b object.Info) bool {
	return a.ETag == b.ETag && a.Size == b.Size && a.ContentType == b.ContentType && maps.Equal(a.Metadata, b.Metadata)
}

// readAll reads what Open returned whole.
func readAll(r io.ReadCloser, p object.Info, err error) ([]byte, object.Info, error) {
	if err != nil {
		return nil, p, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return b, p, err
}
