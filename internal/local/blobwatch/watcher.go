package blobwatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/rs/zerolog"
)

// Options configures a Watcher. The zero value of every field is replaced by
// its default.
type Options struct {
	// HostID names the host in receipt paths, as the host's id (derived from
	// the app name) does. Default "devhost".
	HostID string
	// PollInterval is the pause between the scans of Watch. Default 5s.
	PollInterval time.Duration
	// MaxTries is how many times a blob is handed to a failing function
	// before it is poisoned: the host's poisonBlobThreshold. Default 5.
	MaxTries int
	// Logger receives a line per fired, failed and poisoned blob and per
	// failed scan. The zero Logger logs nothing.
	Logger zerolog.Logger
	// Scanned, when set, is told what each scan of Watch did, once it is
	// over (err is the storage error that cut it short, if any).
	Scanned func(function string, s Stats, err error)
}

// Watcher detects new and changed blobs for blob-triggered functions. It is
// safe for concurrent use; scans for the same function take turns.
type Watcher struct {
	blobs  *azblob.Client
	queues *azqueue.ServiceClient
	opts   Options

	pageSize int32 // list page size; 0 is the service's default (5000)

	mu      sync.Mutex
	running map[string]*sync.Mutex // one per function
}

// New returns a Watcher that lists blobs and keeps receipts with blobs and
// writes poison messages with queues, both for the same storage account.
func New(blobs *azblob.Client, queues *azqueue.ServiceClient, opts Options) *Watcher {
	opts.HostID = cmp.Or(opts.HostID, "devhost")
	opts.PollInterval = cmp.Or(opts.PollInterval, 5*time.Second)
	opts.MaxTries = cmp.Or(opts.MaxTries, 5)
	return &Watcher{blobs: blobs, queues: queues, opts: opts, running: map[string]*sync.Mutex{}}
}

// Blob is a blob that a function is to process, as listed.
type Blob struct {
	Container string
	Name      string
	// URL is the blob's URL with each segment of the name escaped and the
	// slashes kept, like the host's Uri.
	URL string
	// ETag is the version of the blob this invocation is for, bare, as
	// listings report it and as receipts and poison messages carry it
	// ("0x8DB…"). HTTP headers and azblob responses quote it ("\"0x8DB…\"");
	// Azure and Azurite accept either form in If-Match.
	ETag       string
	Tokens     map[string]string // the pattern's tokens bound from Name
	Properties Properties
	// Metadata is the blob's user metadata. Its keys are lowercase: the Go
	// SDK lowercases them when listing (Azure compares them case-insensitively).
	Metadata map[string]string
	// Attempt counts the tries of this blob version, from 1.
	Attempt int
}

// Properties are the system properties of a blob, as listing reports them.
// Fields the service did not report are zero.
type Properties struct {
	BlobType           string // "BlockBlob", "AppendBlob" or "PageBlob"
	ContentLength      int64
	ContentType        string
	ContentEncoding    string
	ContentLanguage    string
	ContentDisposition string
	CacheControl       string
	ContentMD5         []byte
	LastModified       time.Time
	CreatedOn          time.Time
	AccessTier         string
	LeaseState         string
	LeaseStatus        string
}

// Stats counts what one scan did.
type Stats struct {
	Matched   int // blobs whose name matched the pattern
	Fired     int // handler calls
	Succeeded int // handler calls that returned nil
	Failed    int // handler calls that returned an error
	Poisoned  int // blobs given up on in this scan
}

// Watch scans p's container for function every PollInterval, starting at
// once, and calls handle for each matching blob version that has no receipt
// yet, until ctx is done. A scan that fails (Azurite down, say) is logged and
// tried again at the next tick. Watch returns nil when ctx is done, and an
// error only for a pattern it cannot watch.
func (w *Watcher) Watch(ctx context.Context, function string, p Pattern, handle func(context.Context, Blob) error) error {
	if err := checkWatchable(function, p); err != nil {
		return err
	}
	tick := time.NewTicker(w.opts.PollInterval)
	defer tick.Stop()
	for {
		stats, err := w.Scan(ctx, function, p, handle)
		if err != nil && ctx.Err() == nil {
			w.opts.Logger.Warn().Err(err).Str("function", function).Str("path", p.String()).Msg("blob scan")
		}
		if w.opts.Scanned != nil && ctx.Err() == nil {
			w.opts.Scanned(function, stats, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Scan makes one pass over p's container for function: it lists the blobs
// under p's literal prefix and, one at a time, calls handle for each matching
// blob version without a receipt. On success it writes the receipt; on
// failure it counts the try and, at MaxTries, writes the poison message and
// marks the receipt poisoned. A handler error does not stop the scan; an
// error from storage does, and is returned. A missing container is not an
// error. If ctx ends while handle runs, that try is not counted.
func (w *Watcher) Scan(ctx context.Context, function string, p Pattern, handle func(context.Context, Blob) error) (Stats, error) {
	var stats Stats
	if err := checkWatchable(function, p); err != nil {
		return stats, err
	}
	turn := w.turn(function)
	turn.Lock()
	defer turn.Unlock()

	opts := &azblob.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: true}}
	if p.Prefix() != "" {
		opts.Prefix = &p.prefix
	}
	if w.pageSize > 0 {
		opts.MaxResults = &w.pageSize
	}
	pager := w.blobs.NewListBlobsFlatPager(p.Container(), opts)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return stats, nil
		}
		if err != nil {
			return stats, fmt.Errorf("list %q: %w", p.Container(), err)
		}
		for _, item := range page.Segment.BlobItems {
			b, ok := w.blob(p, item)
			if !ok {
				continue
			}
			stats.Matched++
			if err := w.process(ctx, function, b, handle, &stats); err != nil {
				return stats, err
			}
		}
	}
	return stats, nil
}

// checkWatchable refuses what Scan cannot do: a zero Pattern, and watching
// the receipts' own container, where every receipt written would fire again.
func checkWatchable(function string, p Pattern) error {
	switch {
	case function == "":
		return errors.New("watch blobs: no function name")
	case p.Container() == "":
		return fmt.Errorf("watch blobs for %s: empty pattern", function)
	case p.Container() == receiptContainer:
		return fmt.Errorf("watch blobs for %s: container %q holds the blob receipts and cannot trigger functions", function, receiptContainer)
	}
	return nil
}

// turn returns the lock that serialises the scans of one function, so two
// overlapping scans do not both fire a blob.
func (w *Watcher) turn(function string) *sync.Mutex {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.running[function]
	if !ok {
		m = &sync.Mutex{}
		w.running[function] = m
	}
	return m
}

// blob converts a listed item, reporting false if its name does not match p.
func (w *Watcher) blob(p Pattern, item *container.BlobItem) (Blob, bool) {
	if item == nil || item.Name == nil || item.Properties == nil || item.Properties.ETag == nil {
		return Blob{}, false
	}
	tokens, ok := p.Match(*item.Name)
	if !ok {
		return Blob{}, false
	}
	pr := item.Properties
	b := Blob{
		Container: p.Container(),
		Name:      *item.Name,
		URL:       w.blobURL(p.Container(), *item.Name),
		ETag:      bareETag(string(*pr.ETag)),
		Tokens:    tokens,
		Metadata:  make(map[string]string, len(item.Metadata)),
		Properties: Properties{
			BlobType:           string(deref(pr.BlobType)),
			ContentLength:      deref(pr.ContentLength),
			ContentType:        deref(pr.ContentType),
			ContentEncoding:    deref(pr.ContentEncoding),
			ContentLanguage:    deref(pr.ContentLanguage),
			ContentDisposition: deref(pr.ContentDisposition),
			CacheControl:       deref(pr.CacheControl),
			ContentMD5:         pr.ContentMD5,
			LastModified:       deref(pr.LastModified).UTC(),
			CreatedOn:          deref(pr.CreationTime).UTC(),
			AccessTier:         string(deref(pr.AccessTier)),
			LeaseState:         string(deref(pr.LeaseState)),
			LeaseStatus:        string(deref(pr.LeaseStatus)),
		},
	}
	if b.Properties.BlobType == "" {
		b.Properties.BlobType = "BlockBlob"
	}
	for k, v := range item.Metadata {
		b.Metadata[k] = deref(v)
	}
	return b, true
}

// blobURL escapes each segment of name, keeping the slashes (the SDK's blob
// clients escape them as %2F; the host's Uri does not).
func (w *Watcher) blobURL(container, name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return w.blobs.ServiceClient().NewContainerClient(container).URL() + "/" + strings.Join(segs, "/")
}

// bareETag strips the quotes of an HTTP entity tag: listings report ETags
// bare, headers quoted, and receipts and poison messages use them bare.
func bareETag(etag string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(etag, "W/"), `"`), `"`)
}

// deref returns *p, or the zero value if p is nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
