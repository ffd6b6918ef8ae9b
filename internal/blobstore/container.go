package blobstore

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tickets"
)

// Container lists and reads the blobs of one container: the nightly
// job's tickets.Blobs. It is safe for concurrent use.
type Container struct {
	client *container.Client
}

var _ tickets.Blobs = (*Container)(nil)

// NewContainer returns a Container over client.
func NewContainer(client *container.Client) *Container { return &Container{client: client} }

// List yields the blobs under prefix in name order, a page at a time as
// the service returns them. A listing error ends it; a missing container
// is object.ErrNotFound.
func (c *Container) List(ctx context.Context, prefix string) iter.Seq2[object.Entry, error] {
	return func(yield func(object.Entry, error) bool) {
		pager := c.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(object.Entry{}, fmt.Errorf("list blobs: %w", translate(err)))
				return
			}
			for _, item := range page.Segment.BlobItems {
				if item == nil || item.Name == nil {
					continue
				}
				e := object.Entry{Name: *item.Name}
				if item.Properties != nil {
					e.Size = deref(item.Properties.ContentLength)
				}
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// Open streams the blob name, resuming after a broken connection. A
// missing blob (or container) is object.ErrNotFound.
func (c *Container) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	resp, err := c.client.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("download blob %q: %w", name, translate(err))
	}
	return resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3}), nil
}
