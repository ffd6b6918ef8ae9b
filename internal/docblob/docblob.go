// Package docblob is the queue path's adapter to Blob Storage: it reads a
// dropped document as a stream, pinned to the version its claim check names
// (If-Match on the ETag), and writes the result for the search indexer so
// that it appears whole or not at all. A result is staged as blocks while
// it is produced and made visible by one commit, so a process that dies
// half-way leaves only uncommitted blocks, which the service discards; a
// result small enough for one block is uploaded in one request.
//
// SDK errors are translated here: a missing blob is ErrNotFound, a blob
// that changed since its claim check ErrChanged. Anything else is returned
// wrapped, and callers treat it as transient.
package docblob

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
)

// Errors callers test with errors.Is.
var (
	// ErrNotFound: the blob (or its container) does not exist.
	ErrNotFound = errors.New("blob not found")
	// ErrChanged: the blob is no longer the version asked for.
	ErrChanged = errors.New("blob changed")
)

// DefaultBlockSize is the size of one staged block of a result.
const DefaultBlockSize = 4 << 20

// Properties describe a blob.
type Properties struct {
	ETag        string
	Size        int64
	ContentType string
	Metadata    map[string]string
}

// Store reads the incoming container and writes the results container of
// one storage account. It is safe for concurrent use.
type Store struct {
	client    *azblob.Client
	incoming  string
	results   string
	blockSize int
	mu        sync.Mutex
	ready     bool // the results container exists
}

// New returns a Store over client: documents are read from the container
// incoming, results written to results. blockSize 0 means DefaultBlockSize.
func New(client *azblob.Client, incoming, results string, blockSize int) *Store {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	return &Store{client: client, incoming: incoming, results: results, blockSize: blockSize}
}

// AccountURL is the blob endpoint of the account, without a trailing slash
// ("http://127.0.0.1:10000/devstoreaccount1" on Azurite).
func (s *Store) AccountURL() string { return strings.TrimSuffix(s.client.URL(), "/") }

// Open streams the document name of the incoming container at version
// etag. A broken connection is resumed from where it broke, at the same
// version.
func (s *Store) Open(ctx context.Context, name, etag string) (io.ReadCloser, Properties, error) {
	res, err := s.download(ctx, name, etag)
	if err != nil {
		return nil, Properties{}, err
	}
	p := Properties{ETag: strings.Trim(string(deref(res.ETag)), `"`), Size: deref(res.ContentLength), ContentType: deref(res.ContentType), Metadata: derefMap(res.Metadata)}
	return res.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3}), p, nil
}

// download starts reading the document name at version etag.
func (s *Store) download(ctx context.Context, name, etag string) (blob.DownloadStreamResponse, error) {
	b := s.client.ServiceClient().NewContainerClient(s.incoming).NewBlobClient(name)
	res, err := b.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: pinned(etag)})
	if err != nil {
		err = classify(err, "read document")
		if errors.Is(err, ErrChanged) { // Azurite answers 412 for a missing blob too
			if _, serr := s.Stat(ctx, name); errors.Is(serr, ErrNotFound) {
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
func (s *Store) Stat(ctx context.Context, name string) (Properties, error) {
	res, err := s.client.ServiceClient().NewContainerClient(s.incoming).NewBlobClient(name).GetProperties(ctx, nil)
	if err != nil {
		return Properties{}, classify(err, "read document properties")
	}
	return Properties{ETag: strings.Trim(string(deref(res.ETag)), `"`), Size: deref(res.ContentLength), ContentType: deref(res.ContentType), Metadata: derefMap(res.Metadata)}, nil
}

// Redrop writes the document name of the incoming container again, at
// version etag, with the same bytes, content headers and metadata, as its
// uploader would: a new version (a new ETag) that the blob trigger sees as
// any upload (Event Grid's BlobCreated fires for the commit; a container
// scan sees the new ETag). It streams the blob through, staging blocks,
// and commits only if the blob is still at etag: ErrChanged if it is not,
// ErrNotFound if it is gone. It returns the new version's properties.
func (s *Store) Redrop(ctx context.Context, name, etag string) (Properties, error) {
	res, err := s.download(ctx, name, etag)
	if err != nil {
		return Properties{}, err
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
		return Properties{}, classify(err, "write document again")
	}
	return Properties{ETag: strings.Trim(string(deref(up.ETag)), `"`), Size: deref(res.ContentLength), ContentType: deref(res.ContentType), Metadata: derefMap(res.Metadata)}, nil
}

// Delete removes the result name, if there is one.
func (s *Store) Delete(ctx context.Context, name string) error {
	_, err := s.client.DeleteBlob(ctx, s.results, name, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return fmt.Errorf("delete result %s: %w", name, err)
	}
	return nil
}

// Read returns the whole result name (for tests and the operator; results
// can be large).
func (s *Store) Read(ctx context.Context, name string) ([]byte, Properties, error) {
	res, err := s.client.DownloadStream(ctx, s.results, name, nil)
	if err != nil {
		return nil, Properties{}, classify(err, "read result")
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, Properties{}, fmt.Errorf("read result %s: %w", name, err)
	}
	return b, Properties{ETag: strings.Trim(string(deref(res.ETag)), `"`), Size: deref(res.ContentLength), ContentType: deref(res.ContentType), Metadata: derefMap(res.Metadata)}, nil
}

// Create starts the result name. Nothing is visible until Commit.
func (s *Store) Create(name string) *Writer {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &Writer{s: s, name: name, attempt: hex.EncodeToString(id[:]), buf: make([]byte, 0, min(s.blockSize, 64<<10))}
}

// Writer builds one result. It is not safe for concurrent use.
type Writer struct {
	s       *Store
	name    string
	attempt string   // makes block ids unique to this writer
	buf     []byte   // not yet staged
	blocks  []string // staged block ids, in order
	n       int64
}

// Write appends p to the result, staging a block whenever a block's worth
// has accumulated.
func (w *Writer) Write(ctx context.Context, p []byte) error {
	w.buf = append(w.buf, p...)
	w.n += int64(len(p))
	if len(w.buf) >= w.s.blockSize {
		return w.stage(ctx, w.buf)
	}
	return nil
}

// Size is how many bytes have been written (the head excluded).
func (w *Writer) Size() int64 { return w.n }

// Commit makes the result visible: head first, then everything written,
// with the content type and metadata given. It replaces an earlier result
// of the same name at once.
func (w *Writer) Commit(ctx context.Context, head []byte, contentType string, metadata map[string]string) error {
	if err := w.s.ensure(ctx); err != nil {
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

func (w *Writer) stage(ctx context.Context, b []byte) error {
	if err := w.s.ensure(ctx); err != nil {
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
func (w *Writer) blockID(suffix string) string {
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("%s-%-8s", w.attempt, suffix)))
}

// ensure creates the results container once.
func (s *Store) ensure(ctx context.Context) error {
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

func classify(err error, what string) error {
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound):
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	case bloberror.HasCode(err, bloberror.ConditionNotMet):
		return fmt.Errorf("%s: %w", what, ErrChanged)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == 412 {
		return fmt.Errorf("%s: %w", what, ErrChanged)
	}
	if errors.As(err, &re) && re.StatusCode == 404 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return fmt.Errorf("%s: %w", what, err)
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
