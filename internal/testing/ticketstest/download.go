package ticketstest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Download lists the blobs under prefix and reads each to io.Discard,
// workers at a time: the least any reader of those blobs must do, and so
// the baseline a collector is compared with. It returns the bytes read; it
// stops at the first error.
func Download(ctx context.Context, c *container.Client, prefix string, workers int) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	names := make(chan string, 64)
	var total atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for name := range names {
				n, err := discard(ctx, c, name)
				total.Add(n)
				if err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	err := list(ctx, c, prefix, func(item *container.BlobItem) error {
		select {
		case names <- *item.Name:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(names)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil {
		err = cause // a worker's error, or ctx's
	}
	return total.Load(), err
}

// Size returns the total size of the blobs under prefix, as listed.
func Size(ctx context.Context, c *container.Client, prefix string) (int64, error) {
	var size int64
	err := list(ctx, c, prefix, func(item *container.BlobItem) error {
		size += *item.Properties.ContentLength
		return nil
	})
	return size, err
}

// discard reads the blob name to io.Discard and returns the bytes read.
func discard(ctx context.Context, c *container.Client, name string) (int64, error) {
	resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("download %s: %w", name, err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, fmt.Errorf("read %s: %w", name, err)
	}
	return n, nil
}

// list calls fn for each blob under prefix, in the listing's order, and
// stops at fn's first error.
func list(ctx context.Context, c *container.Client, prefix string, fn func(*container.BlobItem) error) error {
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, item := range page.Segment.BlobItems {
			if err := fn(item); err != nil {
				return err
			}
		}
	}
	return nil
}
