package ingest

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/chunk"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tenant"
)

// Defaults of Options.
const (
	DefaultAlias            = "ingest"
	DefaultResultsContainer = "ingested"
	DefaultSummaryMaxTokens = 256
	DefaultTenantTTL        = 30 * time.Second
	DefaultMaxDeliveryCount = 10
)

// Tenants finds tenants; *tablestore.Tenants is one.
type Tenants interface {
	Get(ctx context.Context, id string) (tenant.Tenant, error)
}

// Statuses keeps document statuses; *tablestore.Documents is one.
type Statuses interface {
	Get(ctx context.Context, partition, name string) (document.Status, error)
	Put(ctx context.Context, name string, st document.Status) (document.Status, error)
	Update(ctx context.Context, partition, name string, change func(st *document.Status, found bool) (bool, error)) (document.Status, error)
}

// Ledger records usage; *tablestore.Ledger is one.
type Ledger interface {
	RecordBatch(ctx context.Context, entries []ledger.Entry) error
	// Abandon marks existing rows (by key) as unfinished attempts.
	Abandon(ctx context.Context, entries []ledger.Entry) error
}

// Outcomes counts how deliveries ended; *tokenmetrics.Prometheus is one.
type Outcomes interface {
	// Settled counts one delivery of tenant's (document.Unattributed for
	// a claim check that names none) that ended with k.
	Settled(tenant string, k outcome.Kind)
}

// Blobs reads documents and writes results; package blobstore's Documents
// is one. A missing document is object.ErrNotFound, one no longer at the
// version asked for object.ErrChanged.
type Blobs interface {
	// Stat reads a document's properties (one Get Properties call).
	Stat(ctx context.Context, name string) (object.Info, error)
	// Open streams the document at version etag.
	Open(ctx context.Context, name, etag string) (io.ReadCloser, object.Info, error)
	NewResult(name string) ResultWriter
	DeleteResult(ctx context.Context, name string) error
	// Redrop writes the document again from version etag, as a new
	// version its uploader could have written (same bytes, headers and
	// metadata), committed only if the document is still at etag.
	Redrop(ctx context.Context, name, etag string) (object.Info, error)
}

// ResultWriter builds one result: it is staged while it is written and
// appears whole, or not at all, when Commit makes it visible.
type ResultWriter interface {
	// Write appends p to the result.
	Write(ctx context.Context, p []byte) error
	// Commit makes the result visible, head first, then everything
	// written, replacing an earlier result of the same name at once.
	Commit(ctx context.Context, head []byte, contentType string, metadata map[string]string) error
}

// Options are what both halves need. Zero fields take the defaults.
type Options struct {
	// Rules validate, encode, decode and route claim checks. Required.
	Rules *claimcheck.Rules
	// Catalog resolves the ingestion alias to its chat (queue) and
	// embeddings deployments. Required.
	Catalog *catalog.Catalog
	// Alias is the model alias documents are ingested with. Default "ingest".
	Alias    string
	Tenants  Tenants
	Statuses Statuses
	// Ledger and Models are needed by the Processor only; Blobs by both.
	Ledger Ledger
	Models Models
	Blobs  Blobs
	// ResultsContainer names the container results go to, for the status
	// records. Default "ingested".
	ResultsContainer string
	// Chunk sizes the chunks (default 512 tokens, 64 of overlap).
	Chunk chunk.Options
	// EmbedBatch and EmbedBatchTokens group chunks into one embeddings
	// request. Default 64 and 8,000 (DefaultEmbedBatch and
	// DefaultEmbedBatchTokens, which the adapter uses too).
	EmbedBatch       int
	EmbedBatchTokens int
	// SummaryInputTokens is how much of the text the summary reads, from
	// the start. Default 12,000.
	SummaryInputTokens int
	// SummaryMaxTokens bounds the summary's completion. Default 256.
	SummaryMaxTokens int
	// Budget bounds the processing of one message, waits for 429s and 5xx
	// included: keep it below the Service Bus lock renewal and the
	// invocation's deadline (config.Ingest.Budget). 0: the context's
	// deadline only.
	Budget time.Duration
	// TenantTTL is how long a tenant, once read, is trusted. Default 30 s.
	TenantTTL time.Duration
	// MaxDeliveryCount is each queue's MaxDeliveryCount, by queue name: a
	// transient failure on that delivery is the last one Service Bus
	// allows (it dead-letters the message), so the document is recorded
	// dead-lettered rather than retrying. A queue not named has Service
	// Bus's default, DefaultMaxDeliveryCount.
	MaxDeliveryCount map[string]int
	// Outcomes, if set, counts the Processor's settled deliveries.
	Outcomes Outcomes
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() error {
	o.Alias = cmp.Or(o.Alias, DefaultAlias)
	o.ResultsContainer = cmp.Or(o.ResultsContainer, DefaultResultsContainer)
	o.EmbedBatch = cmp.Or(o.EmbedBatch, DefaultEmbedBatch)
	o.EmbedBatchTokens = cmp.Or(o.EmbedBatchTokens, DefaultEmbedBatchTokens)
	o.SummaryInputTokens = cmp.Or(o.SummaryInputTokens, DefaultSummaryInput)
	o.SummaryMaxTokens = cmp.Or(o.SummaryMaxTokens, DefaultSummaryMaxTokens)
	o.TenantTTL = cmp.Or(o.TenantTTL, DefaultTenantTTL)
	if o.Now == nil {
		o.Now = time.Now
	}
	var errs []error
	if o.Rules == nil || o.Catalog == nil || o.Tenants == nil || o.Statuses == nil {
		errs = append(errs, errors.New("rules, catalog, tenants and statuses are required"))
	}
	if o.Catalog != nil {
		if a, ok := o.Catalog.Alias(o.Alias); !ok || a.Queue == nil || a.Embedding == nil {
			errs = append(errs, fmt.Errorf("alias %q: the model catalog must have it, with a queue and an embedding deployment", o.Alias))
		}
	}
	if o.EmbedBatch < 1 || o.EmbedBatchTokens < 1 || o.SummaryInputTokens < 1 || o.SummaryMaxTokens < 1 {
		errs = append(errs, errors.New("embed batch, embed batch tokens, summary input and summary max tokens must be positive"))
	}
	for q, n := range o.MaxDeliveryCount {
		if n < 1 {
			errs = append(errs, fmt.Errorf("queue %q: max delivery count %d is below 1", q, n))
		}
	}
	if _, err := chunk.New(nil, o.Chunk); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}

// maxDeliveryCount is the MaxDeliveryCount of queue.
func (o *Options) maxDeliveryCount(queue string) int {
	if n, ok := o.MaxDeliveryCount[queue]; ok {
		return n
	}
	return DefaultMaxDeliveryCount
}

// tenantCache trusts a tenant read for a while, so a burst of documents
// of one tenant costs one read.
type tenantCache struct {
	src Tenants
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	m   map[string]cachedTenant
}

type cachedTenant struct {
	t   tenant.Tenant
	err error
	at  time.Time
}

func (c *tenantCache) get(ctx context.Context, id string) (tenant.Tenant, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.t, e.err
	}
	t, err := c.src.Get(ctx, id)
	if err != nil && !errors.Is(err, tenant.ErrNotFound) {
		return t, fmt.Errorf("read tenant %s: %w", id, err) // transient: not cached
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedTenant{}
	}
	c.m[id] = cachedTenant{t, err, now}
	c.mu.Unlock()
	return t, err
}

// admit checks that the tenant exists, is active and may use alias: an
// outcome.Reject if not, a plain (transient) error if it cannot tell.
func (c *tenantCache) admit(ctx context.Context, id, alias string) error {
	t, err := c.get(ctx, id)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		return outcome.Reject("unknown tenant", fmt.Errorf("no tenant %q", id))
	case err != nil:
		return err
	case t.State != tenant.Active:
		return outcome.Reject("tenant suspended", fmt.Errorf("tenant %q is %s", id, t.State))
	case !t.Allows(alias):
		return outcome.Reject("alias not allowed", fmt.Errorf("tenant %q may not use alias %q", id, alias))
	}
	return nil
}

// reason is a log-safe, bounded explanation of a non-done outcome.
func reason(err error) string {
	var s string
	var oe *outcome.Error
	if errors.As(err, &oe) && oe.Kind != outcome.Transient {
		s = oe.Reason
		if oe.Err != nil {
			s += ": " + oe.Err.Error()
		}
	} else {
		s = err.Error()
	}
	if len(s) > 500 {
		cut := 500
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// newCorrelationID is 32 random hex digits.
func newCorrelationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// documentID is a document's stable id for the search index: a hash of its
// tenant and path, 32 hex digits (a valid index key).
func documentID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}
