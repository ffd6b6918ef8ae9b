package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/offpath/offpath/internal/object"
)

// Defaults of Options (DefaultBlockSize is also Documents' default).
const (
	DefaultBlockSize   = 4 << 20
	DefaultConcurrency = 2
)

// Options tune a Store. Zero values take the defaults.
type Options struct {
	// BlockSize is the size of one staged block, and of each of a writer's
	// buffers. Default 4 MiB.
	BlockSize int64
	// Concurrency is how many blocks one writer uploads at once; memory per
	// writer is BlockSize × Concurrency. Default 2.
	Concurrency int
}

// Store reads and writes blobs in the containers of one storage account.
// It is safe for concurrent use.
type Store struct {
	client *azblob.Client
	opts   Options
	mu     sync.Mutex
	ready  map[string]bool // containers known to exist
}

// New returns a Store over client. It does no I/O: containers are created
// on first write.
func New(client *azblob.Client, o Options) *Store {
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	return &Store{client: client, opts: o, ready: map[string]bool{}}
}

func (s *Store) blob(containerName, name string) *blockblob.Client {
	return s.client.ServiceClient().NewContainerClient(containerName).NewBlockBlobClient(name)
}

// ensure creates the container once per Store.
func (s *Store) ensure(ctx context.Context, containerName string) error {
	s.mu.Lock()
	ok := s.ready[containerName]
	s.mu.Unlock()
	if ok {
		return nil
	}
	_, err := s.client.CreateContainer(ctx, containerName, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create container %s: %w", containerName, err)
	}
	s.mu.Lock()
	s.ready[containerName] = true
	s.mu.Unlock()
	return nil
}

// Stat returns a blob's size, ETag and metadata.
func (s *Store) Stat(ctx context.Context, containerName, name string) (object.Info, error) {
	p, err := s.blob(containerName, name).GetProperties(ctx, nil)
	if err != nil {
		return object.Info{}, fmt.Errorf("stat blob %s/%s: %w", containerName, name, translate(err))
	}
	return info(p.ETag, p.ContentLength, p.ContentType, p.Metadata), nil
}

// Open streams a blob. The caller reads it and closes it. Transient
// failures mid-stream are retried from where they stopped by the SDK's
// retry reader.
func (s *Store) Open(ctx context.Context, containerName, name string) (io.ReadCloser, object.Info, error) {
	return s.open(ctx, containerName, name, nil)
}

// OpenAt streams a blob from a byte offset to its end.
func (s *Store) OpenAt(ctx context.Context, containerName, name string, offset int64) (io.ReadCloser, error) {
	body, _, err := s.open(ctx, containerName, name, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: offset}})
	return body, err
}

func (s *Store) open(ctx context.Context, containerName, name string, o *blob.DownloadStreamOptions) (io.ReadCloser, object.Info, error) {
	res, err := s.blob(containerName, name).DownloadStream(ctx, o)
	if err != nil {
		return nil, object.Info{}, fmt.Errorf("open blob %s/%s: %w", containerName, name, translate(err))
	}
	body := res.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3})
	return body, info(res.ETag, res.ContentLength, res.ContentType, res.Metadata), nil
}

// Delete removes a blob; a blob that is already gone is not an error.
func (s *Store) Delete(ctx context.Context, containerName, name string) error {
	_, err := s.blob(containerName, name).Delete(ctx, nil)
	if err != nil && !errors.Is(translate(err), object.ErrNotFound) {
		return fmt.Errorf("delete blob %s/%s: %w", containerName, name, err)
	}
	return nil
}

// List returns the names of the blobs under prefix, in name order.
func (s *Store) List(ctx context.Context, containerName, prefix string) ([]string, error) {
	pager := s.client.NewListBlobsFlatPager(containerName, &azblob.ListBlobsFlatOptions{Prefix: &prefix})
	var out []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			if errors.Is(translate(err), object.ErrNotFound) {
				return out, nil
			}
			return nil, fmt.Errorf("list blobs %s/%s: %w", containerName, prefix, err)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name != nil {
				out = append(out, *b.Name)
			}
		}
	}
	return out, nil
}

// DeletePrefix removes every blob under prefix.
func (s *Store) DeletePrefix(ctx context.Context, containerName, prefix string) error {
	names, err := s.List(ctx, containerName, prefix)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if ctx.Err() != nil { // one error for the rest, not one per blob
			return errors.Join(append(errs, fmt.Errorf("delete %s/%s*: %w", containerName, prefix, ctx.Err()))...)
		}
		if err := s.Delete(ctx, containerName, n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SetMetadata replaces a blob's metadata.
func (s *Store) SetMetadata(ctx context.Context, containerName, name string, md map[string]string) error {
	m := make(map[string]*string, len(md))
	for k, v := range maps.All(md) {
		m[k] = &v
	}
	if _, err := s.blob(containerName, name).SetMetadata(ctx, m, nil); err != nil {
		return fmt.Errorf("set metadata of %s/%s: %w", containerName, name, translate(err))
	}
	return nil
}

// SetContentType sets the Content-Type a blob is served with (a report
// meant for a browser is text/html, not the default octet stream).
func (s *Store) SetContentType(ctx context.Context, containerName, name, contentType string) error {
	if _, err := s.blob(containerName, name).SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: &contentType}, nil); err != nil {
		return fmt.Errorf("set content type of %s/%s: %w", containerName, name, translate(err))
	}
	return nil
}

// translate maps SDK errors to package object's sentinels, once for every
// call: a missing blob or container is object.ErrNotFound, a failed condition
// (412, ConditionNotMet) object.ErrChanged, a 409 object.ErrConflict. Anything else is
// returned as it is.
func translate(err error) error {
	var re *azcore.ResponseError
	isStatus := func(code int) bool { return errors.As(err, &re) && re.StatusCode == code }
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound), isStatus(http.StatusNotFound):
		return fmt.Errorf("%w: %w", object.ErrNotFound, err)
	case bloberror.HasCode(err, bloberror.ConditionNotMet), isStatus(http.StatusPreconditionFailed):
		return fmt.Errorf("%w: %w", object.ErrChanged, err)
	case isStatus(http.StatusConflict):
		return fmt.Errorf("%w: %w", object.ErrConflict, err)
	}
	return err
}

// info describes a blob from a response's headers.
func info(etag *azcore.ETag, size *int64, contentType *string, metadata map[string]*string) object.Info {
	return object.Info{ETag: strings.Trim(string(deref(etag)), `"`), Size: deref(size), ContentType: deref(contentType), Metadata: derefMap(metadata)}
}
