package blobstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/object"
)

// Documents reads the incoming container and writes the results container
// of one storage account: the queue path's ingest.Blobs. It is safe for
// concurrent use.
type Documents struct {
	client    *azblob.Client
	incoming  string
	results   string
	blockSize int
	mu        sync.Mutex
	ready     bool // the results container exists
}

var _ ingest.Blobs = (*Documents)(nil)

// NewDocuments returns Documents over client: documents are read from the
// container incoming, results written to results. blockSize 0 means
// DefaultBlockSize.
func NewDocuments(client *azblob.Client, incoming, results string, blockSize int) *Documents {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	return &Documents{client: client, incoming: incoming, results: results, blockSize: blockSize}
}

// AccountURL is the blob endpoint of the account, without a trailing slash
// ("http://127.0.0.1:10000/devstoreaccount1" on Azurite).
func (s *Documents) AccountURL() string { return strings.TrimSuffix(s.client.URL(), "/") }

// Open streams the document name of the incoming container at version
// etag. A broken connection is resumed from where it broke, at the same
// version.
func (s *Documents) Open(ctx context.Context, name, etag string) (io.ReadCloser, object.Info, error) {
	res, err := s.download(ctx, name, etag)
	if err != nil {
		return nil, object.Info{}, err
	}
	p := info(res.ETag, res.ContentLength, res.ContentType, res.Metadata)
	return res.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3}), p, nil
}

// download starts reading the document name at version etag.
func (s *Documents) download(ctx context.Context, name, etag string) (blob.DownloadStreamResponse, error) {
	b := s.client.ServiceClient().NewContainerClient(s.incoming).NewBlobClient(name)
	res, err := b.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: pinned(etag)})
	if err != nil {
		err = fmt.Errorf("read document: %w", translate(err))
		if errors.Is(err, object.ErrChanged) { // Azurite answers 412 for a missing blob too
			if _, serr := s.Stat(ctx, name); errors.Is(serr, object.ErrNotFound) {
				err = serr
			}
		}
	}
	return res, err
}

// pinned is the condition that the blob is at version etag.
func pinned(etag string) *blob.AccessConditions {
	tag := azcore.ETag(quoted(etag))
	return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &tag}}
}

// Stat returns the properties of the document name in the incoming
// container.
func (s *Documents) Stat(ctx context.Context, name string) (object.Info, error) {
	res, err := s.client.ServiceClient().NewContainerClient(s.incoming).NewBlobClient(name).GetProperties(ctx, nil)
	if err != nil {
		return object.Info{}, fmt.Errorf("read document properties: %w", translate(err))
	}
	return info(res.ETag, res.ContentLength, res.ContentType, res.Metadata), nil
}

// Redrop writes the document name of the incoming container again, at
// version etag, with the same bytes, content headers and metadata, as its
// uploader would: a new version (a new ETag) that the blob trigger sees as
// any upload (Event Grid's BlobCreated fires for the commit; a container
// scan sees the new ETag). It streams the blob through, staging blocks,
// and commits only if the blob is still at etag: object.ErrChanged if it is not,
// object.ErrNotFound if it is gone. It returns the new version's properties.
func (s *Documents) Redrop(ctx context.Context, name, etag string) (object.Info, error) {
	res, err := s.download(ctx, name, etag)
	if err != nil {
		return object.Info{}, err
	}
	body := res.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3})
	defer body.Close()
	b := s.client.ServiceClient().NewContainerClient(s.incoming).NewBlockBlobClient(name)
	up, err := b.UploadStream(ctx, body, &blockblob.UploadStreamOptions{
		BlockSize: int64(s.blockSize), Concurrency: 2, Metadata: res.Metadata, AccessConditions: pinned(etag),
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: res.ContentType, BlobContentEncoding: res.ContentEncoding,
			BlobContentLanguage: res.ContentLanguage, BlobContentDisposition: res.ContentDisposition, BlobCacheControl: res.CacheControl},
	})
	if err != nil {
		return object.Info{}, fmt.Errorf("write document again: %w", translate(err))
	}
	return info(up.ETag, res.ContentLength, res.ContentType, res.Metadata), nil
}

// DeleteResult removes the result name, if there is one.
func (s *Documents) DeleteResult(ctx context.Context, name string) error {
	_, err := s.client.DeleteBlob(ctx, s.results, name, nil)
	if err != nil && !errors.Is(translate(err), object.ErrNotFound) {
		return fmt.Errorf("delete result %s: %w", name, err)
	}
	return nil
}

// Read returns the whole result name (for tests and the operator; results
// can be large).
func (s *Documents) Read(ctx context.Context, name string) ([]byte, object.Info, error) {
	res, err := s.client.DownloadStream(ctx, s.results, name, nil)
	if err != nil {
		return nil, object.Info{}, fmt.Errorf("read result: %w", translate(err))
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, object.Info{}, fmt.Errorf("read result %s: %w", name, err)
	}
	return b, info(res.ETag, res.ContentLength, res.ContentType, res.Metadata), nil
}

// NewResult starts the result name. Nothing is visible until Commit.
func (s *Documents) NewResult(name string) ingest.ResultWriter {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &ResultWriter{s: s, name: name, attempt: hex.EncodeToString(id[:]), buf: make([]byte, 0, min(s.blockSize, 64<<10))}
}

// ResultWriter builds one result. It is not safe for concurrent use.
type ResultWriter struct {
	s       *Documents
	name    string
	attempt string   // makes block ids unique to this writer
	buf     []byte   // not yet staged
	blocks  []string // staged block ids, in order
	n       int64
}

// Write appends p to the result, staging a block whenever a block's worth
// has accumulated.
func (w *ResultWriter) Write(ctx context.Context, p []byte) error {
	w.buf = append(w.buf, p...)
	w.n += int64(len(p))
	if len(w.buf) >= w.s.blockSize {
		return w.stage(ctx, w.buf)
	}
	return nil
}

// Size is how many bytes have been written (the head excluded).
func (w *ResultWriter) Size() int64 { return w.n }

// Commit makes the result visible: head first, then everything written,
// with the content type and metadata given. It replaces an earlier result
// of the same name at once.
func (w *ResultWriter) Commit(ctx context.Context, head []byte, contentType string, metadata map[string]string) error {
	if err := w.s.ensureResults(ctx); err != nil {
		return err
	}
	md := make(map[string]*string, len(metadata))
	for k, v := range metadata {
		md[k] = &v
	}
	headers := &blob.HTTPHeaders{BlobContentType: &contentType}
	bb := w.s.client.ServiceClient().NewContainerClient(w.s.results).NewBlockBlobClient(w.name)
	if len(w.blocks) == 0 && len(head)+len(w.buf) <= w.s.blockSize {
		body := make([]byte, 0, len(head)+len(w.buf))
		body = append(append(body, head...), w.buf...)
		if _, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(body)), &blockblob.UploadOptions{Metadata: md, HTTPHeaders: headers}); err != nil {
			return fmt.Errorf("write result %s: %w", w.name, err)
		}
		return nil
	}
	if len(w.buf) > 0 {
		if err := w.stage(ctx, w.buf); err != nil {
			return err
		}
	}
	ids := w.blocks
	if len(head) > 0 {
		headID := w.blockID("head")
		if _, err := bb.StageBlock(ctx, headID, streaming.NopCloser(bytes.NewReader(head)), nil); err != nil {
			return fmt.Errorf("write result %s: %w", w.name, err)
		}
		ids = append([]string{headID}, w.blocks...)
	}
	if _, err := bb.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{Metadata: md, HTTPHeaders: headers}); err != nil {
		return fmt.Errorf("write result %s: %w", w.name, err)
	}
	return nil
}

func (w *ResultWriter) stage(ctx context.Context, b []byte) error {
	if err := w.s.ensureResults(ctx); err != nil {
		return err
	}
	id := w.blockID(fmt.Sprintf("%08d", len(w.blocks)))
	bb := w.s.client.ServiceClient().NewContainerClient(w.s.results).NewBlockBlobClient(w.name)
	if _, err := bb.StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(b)), nil); err != nil {
		return fmt.Errorf("write result %s: %w", w.name, err)
	}
	w.blocks = append(w.blocks, id)
	w.buf = w.buf[:0]
	return nil
}

// blockID is a base64 id of fixed length (the service requires every id of
// a blob to have the same length).
func (w *ResultWriter) blockID(suffix string) string {
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("%s-%-8s", w.attempt, suffix)))
}

// ensureResults creates the results container once.
func (s *Documents) ensureResults(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return nil
	}
	if _, err := s.client.CreateContainer(ctx, s.results, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create container %s: %w", s.results, err)
	}
	s.ready = true
	return nil
}

func quoted(etag string) string {
	if strings.HasPrefix(etag, `"`) {
		return etag
	}
	return `"` + etag + `"`
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// derefMap returns metadata with lowercase keys: they are
// case-insensitive, and the SDK canonicalises them as header names.
func derefMap(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[strings.ToLower(k)] = *v
		}
	}
	return out
}
