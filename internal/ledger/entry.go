package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ident"
	"github.com/offpath/offpath/internal/tenant"
)

// Path is the way the work went: Queue or Batch.
type Path = catalog.Path

// The paths.
const (
	Queue = catalog.Queue
	Batch = catalog.Batch
)

// ErrInvalid: an entry breaks the rules of Validate.
var ErrInvalid = errors.New("invalid ledger entry")

// MaxUnitLen bounds the caller's unit key.
const MaxUnitLen = 1024

// Entry is one ledger row: what one attributable unit of work spent.
type Entry struct {
	Tenant string
	// Month is the unit's month, derived from the unit (e.g. the message's
	// enqueued time, the batch job's creation time) so that every retry
	// computes the same one.
	Month Month
	Path  Path
	// Unit identifies the unit of work for its path, stable across retries:
	// e.g. a queue message's blob URL and ETag, or an offpath batch job id.
	// Free text up to MaxUnitLen bytes; it is hashed into the row key.
	Unit       string
	Alias      string
	Deployment string
	Usage
	// Unfinished says the attempt that spent this has not finished its
	// work: a queue delivery meters each model call as it returns, under
	// a unit of its own, and marks its rows finished only when the
	// document ends. A row left unfinished is an abandoned attempt (the
	// process crashed, or the delivery was retried), or one in progress.
	// Its tokens were billed all the same: reports count them, apart.
	Unfinished bool
	// Recorded is when the entry was (last) written; informational.
	Recorded time.Time
}

// Key is the entry's deterministic row key within its tenant and month:
// the path, then a hash of the unit, alias and deployment. The same unit
// always has the same key; different units (or the same unit on another
// deployment) never share one.
func (e *Entry) Key() string {
	h := sha256.New()
	h.Write([]byte(e.Unit))
	h.Write([]byte{0})
	h.Write([]byte(e.Alias))
	h.Write([]byte{0})
	h.Write([]byte(e.Deployment))
	var sum [sha256.Size]byte
	return string(e.Path) + "-" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// Validate checks the entry, naming every bad field.
func (e *Entry) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...)))
	}
	if err := tenant.ValidateID(e.Tenant); err != nil {
		bad("tenant", "%v", err)
	}
	if e.Month.IsZero() {
		bad("month", "is required")
	}
	if _, err := catalog.ParsePath(string(e.Path)); err != nil {
		bad("path", "%v", err)
	}
	switch {
	case e.Unit == "":
		bad("unit", "is required")
	case len(e.Unit) > MaxUnitLen || !ident.Valid(e.Unit):
		bad("unit", "must be printable UTF-8 of at most %d bytes", MaxUnitLen)
	}
	if !catalog.ValidAlias(e.Alias) {
		bad("alias", "%q is not an alias name", clip(e.Alias))
	}
	if !catalog.ValidDeployment(e.Deployment) {
		bad("deployment", "%q is not a deployment name", clip(e.Deployment))
	}
	u := e.Usage
	for _, c := range []struct {
		name string
		v    int64
	}{{"prompt_tokens", u.PromptTokens}, {"completion_tokens", u.CompletionTokens}, {"cached_tokens", u.CachedTokens},
		{"reasoning_tokens", u.ReasoningTokens}, {"requests", u.Requests}, {"refusals", u.Refusals}, {"cost", int64(u.Cost)}} {
		if c.v < 0 {
			bad(c.name, "must be ≥ 0")
		}
	}
	if u.CachedTokens > u.PromptTokens {
		bad("cached_tokens", "must not exceed prompt_tokens (cached tokens are part of the prompt)")
	}
	if u.ReasoningTokens > u.CompletionTokens {
		bad("reasoning_tokens", "must not exceed completion_tokens (reasoning tokens are part of the completion)")
	}
	if u.Refusals > u.Requests {
		bad("refusals", "must not exceed requests")
	}
	return errors.Join(errs...)
}

// ValidateAll checks every entry, naming each bad one by its index.
func ValidateAll(entries []Entry) error {
	var errs []error
	for i := range entries {
		if err := entries[i].Validate(); err != nil {
			errs = append(errs, fmt.Errorf("entries[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Estimate sets the entry's cost from the catalog's price for its alias,
// path and deployment.
func (e *Entry) Estimate(c *catalog.Catalog) error {
	p, err := c.Price(e.Alias, e.Path, e.Deployment)
	if err != nil {
		return fmt.Errorf("estimate cost: %w", err)
	}
	e.Cost = e.CostAt(p)
	return nil
}
