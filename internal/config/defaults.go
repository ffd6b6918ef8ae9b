package config

import (
	"cmp"
	"maps"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/chunk"
	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/reconcile"
)

// The defaults of the settings that have one. WithDefaults is the only
// place they are applied; the ones a package owns are that package's.
const (
	DefaultAppRoot = "."
	// DefaultRequestReadTimeout is how long the handler's server waits for
	// a whole request. The Functions host is its only client, on loopback,
	// but it may stream a caller's body as it arrives: as long as the
	// front allows.
	DefaultRequestReadTimeout = time.Minute
	// DefaultUnboundedInvocation is the invocation timeout when host.json's
	// functionTimeout is unbounded.
	DefaultUnboundedInvocation = 30 * time.Minute

	DefaultAuthCacheTTL          = 30 * time.Second
	DefaultAuthRevocationBound   = 5 * time.Second
	DefaultAuthFailuresPerMinute = 20

	DefaultSurface   = "v1"
	DefaultInstances = 1

	DefaultBatchPollInterval    = time.Minute
	DefaultBatchPollConcurrency = 16
	DefaultBatchCoolOff         = 10 * time.Minute
	DefaultBatchCoolOffFailures = 2
	// Packing of small batch jobs (off while OFFPATH_BATCH_PACK_MAX_ITEMS
	// is unset).
	DefaultBatchPackMaxTokens   = 200_000
	DefaultBatchPackWindow      = 10 * time.Minute
	DefaultBatchPackTargetLines = 10_000
	DefaultBatchBackoffBase     = 30 * time.Second
	DefaultBatchHeldAlert       = 6 * time.Hour
	DefaultBatchOverdueMargin   = 2 * time.Hour

	DefaultTicketsTenant       = "support"
	DefaultTicketsAlias        = "summarize"
	DefaultTicketsSystemPrompt = "Summarize the ticket in two sentences."
	DefaultTicketsMaxTokens    = 160
	DefaultTicketsContainer    = "tickets"
	DefaultReportsContainer    = "reports"
	DefaultAuditMinAge         = time.Hour

	DefaultIngestAlias            = "ingest"
	DefaultIngestMaxDocumentBytes = 100 << 20
	DefaultIngestHeavyThreshold   = 8 << 20
	// DefaultMaxDeliveryCount is Service Bus's default MaxDeliveryCount;
	// MaxMaxDeliveryCount the largest a queue takes.
	DefaultMaxDeliveryCount = 10
	MaxMaxDeliveryCount     = 2000

	DefaultReconcilePeriod = time.Hour
)

// WithDefaults returns c with every setting left unset given its default,
// including those that follow from others: the invocation timeout from
// functionTimeout, the batch lease from the invocation timeout, the queue
// path's budget from both and the Service Bus lock renewal, the revocation
// bound from the cache TTL, each deployment's per-instance share from its
// quota.
func (c Handler) WithDefaults() Handler {
	c.AppRoot = cmp.Or(c.AppRoot, DefaultAppRoot)
	if c.InvocationTimeout == 0 {
		c.InvocationTimeout = DefaultUnboundedInvocation
		if c.FunctionTimeout > 0 {
			c.InvocationTimeout = c.FunctionTimeout - margin(c.FunctionTimeout)
		}
	}
	c.RequestReadTimeout = cmp.Or(c.RequestReadTimeout, DefaultRequestReadTimeout)
	if c.LogLevel == nil {
		c.LogLevel = new(zerolog.InfoLevel)
	}
	c.AuthCacheTTL = cmp.Or(c.AuthCacheTTL, DefaultAuthCacheTTL)
	c.AuthRevocationBound = cmp.Or(c.AuthRevocationBound, min(DefaultAuthRevocationBound, c.AuthCacheTTL))
	c.AuthFailuresPerMinute = cmp.Or(c.AuthFailuresPerMinute, DefaultAuthFailuresPerMinute)
	if c.Entra != nil {
		e := *c.Entra
		if e.AppOnly == nil {
			e.AppOnly = new(true)
		}
		c.Entra = &e
	}
	c.AOAI = c.AOAI.withDefaults()
	if c.Batch != nil {
		b := *c.Batch
		b.PollInterval = cmp.Or(b.PollInterval, DefaultBatchPollInterval)
		b.LeaseTTL = cmp.Or(b.LeaseTTL, c.InvocationTimeout+time.Minute)
		b.Concurrency = cmp.Or(b.Concurrency, DefaultBatchPollConcurrency)
		b.CoolOff = cmp.Or(b.CoolOff, DefaultBatchCoolOff)
		b.CoolOffFailures = cmp.Or(b.CoolOffFailures, DefaultBatchCoolOffFailures)
		b.BackoffBase = cmp.Or(b.BackoffBase, DefaultBatchBackoffBase)
		b.HeldAlert = cmp.Or(b.HeldAlert, DefaultBatchHeldAlert)
		b.OverdueMargin = cmp.Or(b.OverdueMargin, DefaultBatchOverdueMargin)
		b.Pack.MaxTokens = cmp.Or(b.Pack.MaxTokens, DefaultBatchPackMaxTokens)
		b.Pack.Window = cmp.Or(b.Pack.Window, DefaultBatchPackWindow)
		b.Pack.TargetLines = cmp.Or(b.Pack.TargetLines, DefaultBatchPackTargetLines)
		c.Batch = &b
	}
	if c.Nightly != nil {
		n := *c.Nightly
		n.Tenant = cmp.Or(n.Tenant, DefaultTicketsTenant)
		n.Alias = cmp.Or(n.Alias, DefaultTicketsAlias)
		n.SystemPrompt = cmp.Or(n.SystemPrompt, DefaultTicketsSystemPrompt)
		n.MaxTokens = cmp.Or(n.MaxTokens, DefaultTicketsMaxTokens)
		n.TicketsContainer = cmp.Or(n.TicketsContainer, DefaultTicketsContainer)
		n.ReportsContainer = cmp.Or(n.ReportsContainer, DefaultReportsContainer)
		if n.AuditMinAge == nil {
			n.AuditMinAge = new(DefaultAuditMinAge)
		}
		c.Nightly = &n
	}
	in := &c.Ingest
	in.Alias = cmp.Or(in.Alias, DefaultIngestAlias)
	in.MaxDocumentBytes = cmp.Or(in.MaxDocumentBytes, DefaultIngestMaxDocumentBytes)
	in.HeavyThreshold = cmp.Or(in.HeavyThreshold, DefaultIngestHeavyThreshold)
	in.ChunkTokens = cmp.Or(in.ChunkTokens, chunk.DefaultSize)
	in.ChunkOverlap = cmp.Or(in.ChunkOverlap, chunk.DefaultOverlap)
	in.MaxDeliveryCount = cmp.Or(in.MaxDeliveryCount, DefaultMaxDeliveryCount)
	in.HeavyMaxDeliveryCount = cmp.Or(in.HeavyMaxDeliveryCount, DefaultMaxDeliveryCount)
	if in.Budget == 0 {
		// Within the invocation, and within the Service Bus lock the host
		// renews (less a tenth, at least 5 s), so the host never loses the
		// lock of a message being processed.
		in.Budget = c.InvocationTimeout
		if d := c.LockRenewal; d > 0 {
			in.Budget = min(in.Budget, d-margin(d))
		}
	}
	if c.Reconcile != nil {
		r := *c.Reconcile
		r.Tolerance = cmp.Or(r.Tolerance, reconcile.DefaultTolerance)
		r.MinTokens = cmp.Or(r.MinTokens, reconcile.DefaultMinTokens)
		r.Settle = cmp.Or(r.Settle, reconcile.DefaultSettle)
		r.Period = cmp.Or(r.Period, DefaultReconcilePeriod)
		r.GlobalBatch = cmp.Or(r.GlobalBatch, reconcile.BatchByDay)
		c.Reconcile = &r
	}
	return c
}

func (a AOAI) withDefaults() AOAI {
	a.Surface = cmp.Or(a.Surface, DefaultSurface)
	a.MaxAttempts = cmp.Or(a.MaxAttempts, azopenai.DefaultQueueMaxAttempts)
	a.BaseBackoff = cmp.Or(a.BaseBackoff, azopenai.DefaultBaseBackoff)
	a.MaxBackoff = cmp.Or(a.MaxBackoff, azopenai.DefaultMaxBackoff)
	a.Instances = cmp.Or(a.Instances, DefaultInstances)
	if a.SharedQuota == nil {
		a.SharedQuota = new(true)
	}
	a.LeaseRenew = cmp.Or(a.LeaseRenew, ratelimit.DefaultRenew)
	a.LeaseTTL = cmp.Or(a.LeaseTTL, ratelimit.DefaultTTL)
	if a.Limits == nil && a.Quotas != nil {
		// Each instance's static share: the whole quota divided among the
		// most instances that may run, at least 1.
		a.Limits = map[string]Limit{}
		for name, q := range a.Quotas {
			a.Limits[name] = Limit(ratelimit.PerInstance(ratelimit.Limits(q), a.Instances))
		}
	} else {
		a.Limits = maps.Clone(a.Limits)
	}
	return a
}

// margin is what an invocation leaves of a host deadline d: a tenth, at
// least 5 s.
func margin(d time.Duration) time.Duration { return max(d/10, 5*time.Second) }
