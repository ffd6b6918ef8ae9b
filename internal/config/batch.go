package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Batch configures the batch control plane. It is nil when
// OFFPATH_AOAI_ENDPOINT is not set: the batch endpoints then answer 503 and
// the batch-poll timer does nothing. The resource it submits to is AOAI;
// inputs and results live in Storage's blobs.
type Batch struct {
	// PollInterval is OFFPATH_BATCH_POLL_INTERVAL (default 60s, Azure's
	// advice): the least time between two polls of one Azure batch.
	PollInterval time.Duration `json:"poll_interval"`
	// LeaseTTL is OFFPATH_BATCH_LEASE_TTL (default: the invocation timeout
	// plus a minute): how long a poller's claim on a job lasts.
	LeaseTTL time.Duration `json:"lease_ttl"`
	// Concurrency is OFFPATH_BATCH_POLL_CONCURRENCY (default 16).
	Concurrency int `json:"concurrency"`
	// Quota is OFFPATH_BATCH_QUOTA, "deployment=tokens,...": each Global
	// Batch deployment's enqueued-token limit.
	Quota map[string]int64 `json:"quota,omitempty"`
	// CoolOff is OFFPATH_BATCH_COOLOFF (default 10m): how long a batch
	// deployment that refused a part for quota, or failed creates
	// repeatedly, is skipped by parts that have another.
	CoolOff time.Duration `json:"cool_off"`
	// CoolOffFailures is OFFPATH_BATCH_COOLOFF_FAILURES (default 2): how
	// many creates in a row may fail at a deployment (5xx or no answer,
	// after the client's own retries) before it cools off.
	CoolOffFailures int `json:"cool_off_failures"`
	// BackoffBase is OFFPATH_BATCH_BACKOFF_BASE (default 30s): the first
	// wait after Azure refuses a job for quota, doubled on each refusal.
	BackoffBase time.Duration `json:"backoff_base"`
	// HeldAlert is OFFPATH_BATCH_HELD_ALERT (default 6h); OverdueMargin
	// OFFPATH_BATCH_OVERDUE_MARGIN (default 2h).
	HeldAlert     time.Duration `json:"held_alert"`
	OverdueMargin time.Duration `json:"overdue_margin"`
	// Pack is the OFFPATH_BATCH_PACK_* settings (see BatchPack).
	Pack BatchPack `json:"pack"`
}

// parseBatch reads the batch settings; it leaves c.Batch nil without an
// endpoint.
func (c *Handler) parseBatch(getenv func(string) string) []error {
	if c.AOAI.Endpoint == "" {
		return nil
	}
	b := &Batch{}
	errs := positiveDurations(getenv, map[string]*time.Duration{"OFFPATH_BATCH_POLL_INTERVAL": &b.PollInterval, "OFFPATH_BATCH_LEASE_TTL": &b.LeaseTTL,
		"OFFPATH_BATCH_BACKOFF_BASE": &b.BackoffBase, "OFFPATH_BATCH_COOLOFF": &b.CoolOff,
		"OFFPATH_BATCH_HELD_ALERT": &b.HeldAlert, "OFFPATH_BATCH_OVERDUE_MARGIN": &b.OverdueMargin})
	if s := getenv("OFFPATH_BATCH_POLL_CONCURRENCY"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 256 {
			errs = append(errs, fmt.Errorf("OFFPATH_BATCH_POLL_CONCURRENCY %q: must be within 1..256", s))
		} else {
			b.Concurrency = n
		}
	}
	if s := getenv("OFFPATH_BATCH_COOLOFF_FAILURES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			errs = append(errs, fmt.Errorf("OFFPATH_BATCH_COOLOFF_FAILURES %q: must be within 1..100", s))
		} else {
			b.CoolOffFailures = n
		}
	}
	pack, perrs := loadPack(getenv)
	b.Pack, errs = pack, append(errs, perrs...)
	var err error
	if b.Quota, err = parseQuota(getenv("OFFPATH_BATCH_QUOTA")); err != nil {
		errs = append(errs, fmt.Errorf("OFFPATH_BATCH_QUOTA: %w", err))
	}
	c.Batch = b
	return errs
}

// parseQuota reads "deployment=tokens,...".
func parseQuota(s string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, v, ok := strings.Cut(part, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if !ok || strings.TrimSpace(name) == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not deployment=tokens", part)
		}
		out[strings.TrimSpace(name)] = n
	}
	return out, nil
}
