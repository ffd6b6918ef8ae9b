package tickets

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/offpath/offpath/internal/object"
)

// file is one listed blob on its way to the decoder. When ready is closed,
// data holds the whole blob (prefetched), or stream reads it (a large blob,
// downloading ahead), or err says why neither; with none of them the blob is
// to be opened in its turn.
type file struct {
	name   string
	size   int64
	format format
	// fetch is whether the blob is read at all (a supported, plausible file).
	fetch bool

	ready  chan struct{}
	data   []byte
	stream *readAhead
	err    error
}

// files lists the blobs under prefix and sends them on the returned channel
// in listing (name) order, downloading ahead so that many small files cost
// bandwidth rather than a round trip each, and large ones download while
// earlier ones are parsed. At most Concurrency downloads run at once: a blob
// of at most PrefetchBytes is read whole, a larger one through a readAhead
// that runs at most 1 MiB ahead of its reader. At most 2×Concurrency files
// wait in the channel, which bounds the memory held ahead to about
// 3×Concurrency×max(PrefetchBytes, 1 MiB). A listing error arrives as a file
// without a name and with err set, and ends the channel. stop cancels
// everything in flight and waits for it; the caller must call it when done.
func (c *Collector) files(ctx context.Context, prefix string) (_ <-chan *file, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan *file, 2*c.opts.Concurrency)
	sem := make(chan struct{}, c.opts.Concurrency)
	var wg sync.WaitGroup
	send := func(f *file) bool {
		select {
		case out <- f:
			return true
		case <-ctx.Done():
			return false
		}
	}
	wg.Go(func() {
		defer close(out)
		for item, err := range c.blobs.List(ctx, prefix) {
			if err != nil {
				f := &file{ready: make(chan struct{}), err: err}
				close(f.ready)
				send(f)
				return
			}
			f := c.listed(item)
			if f == nil {
				continue
			}
			if f.fetch {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				wg.Go(func() {
					defer func() { <-sem }()
					c.fetch(ctx, f)
				})
			} else {
				close(f.ready)
			}
			if !send(f) {
				return
			}
		}
	})
	return out, func() {
		cancel()
		for range out { // drain, so that the lister sees the cancel and exits
		}
		wg.Wait()
	}
}

// listed turns a listing entry into a file, or nil for a folder marker.
func (c *Collector) listed(item object.Entry) *file {
	f := &file{name: item.Name, size: item.Size, ready: make(chan struct{})}
	if f.size == 0 && strings.HasSuffix(f.name, "/") {
		return nil
	}
	f.format = formatOf(f.name)
	f.fetch = f.format != unsupported && !(f.format == oneJSON && f.size > MaxDocumentBytes)
	return f
}

// fetch downloads f ahead of its turn and closes f.ready once the consumer
// may look at it; for a large blob it then goes on filling the read-ahead.
func (c *Collector) fetch(ctx context.Context, f *file) {
	if f.size <= c.opts.PrefetchBytes {
		f.data, f.err = c.download(ctx, f.name, f.size, c.opts.PrefetchBytes)
		close(f.ready)
		return
	}
	body, err := c.blobs.Open(ctx, f.name)
	if err != nil {
		f.err = err
		close(f.ready)
		return
	}
	f.stream = newReadAhead()
	close(f.ready)
	f.stream.fill(ctx, body)
}

// download reads a whole blob of the listed size, at most limit bytes. A
// blob that has grown past limit since it was listed comes back as nil data,
// to be streamed.
func (c *Collector) download(ctx context.Context, name string, size, limit int64) ([]byte, error) {
	body, err := c.blobs.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	n, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read blob %q: %w", name, err)
	}
	if n > limit {
		return nil, nil
	}
	if buf.Len() == 0 {
		return []byte{}, nil
	}
	return buf.Bytes(), nil
}
