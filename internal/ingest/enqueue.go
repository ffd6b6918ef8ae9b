package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/extract"
	"github.com/offpath/offpath/internal/outcome"
)

// Upload is a blob that landed in the incoming container.
type Upload struct {
	// Name is the blob's name in the container, tenant folder first: the
	// {name} of the trigger path "incoming/{name}".
	Name        string
	ETag        string
	Size        int64
	ContentType string
	// Metadata is the blob's user metadata; "correlation_id" (or
	// "correlationid") names the correlation id the uploader chose.
	Metadata map[string]string
}

// Claim is an enqueued document: the claim check and its queue. Queue is
// empty when there was nothing to send (the version was seen before).
type Claim struct {
	Queue   string
	Body    []byte
	Message claimcheck.Message
}

// Enqueuer is the ingest-enqueue function's logic. It is safe for
// concurrent use.
type Enqueuer struct {
	o       Options
	tenants *tenantCache
}

// NewEnqueuer returns an Enqueuer; Options' Ledger, Models and Blobs are
// not used.
func NewEnqueuer(o Options) (*Enqueuer, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	return &Enqueuer{o: o, tenants: &tenantCache{src: o.Tenants, ttl: o.TenantTTL, now: o.Now}}, nil
}

// Rules are the claim-check rules in force.
func (e *Enqueuer) Rules() *claimcheck.Rules { return e.o.Rules }

// Enqueue validates u and returns its claim check. A rejection is recorded
// (status rejected, with the reason) and returned as an outcome.Reject;
// any other error is transient (the trigger is retried). An upload whose
// version has a status beyond queued already is a duplicate event and
// returns an empty Claim, unless force (an operator's reprocess) is set.
func (e *Enqueuer) Enqueue(ctx context.Context, u Upload, force bool) (Claim, error) {
	now := e.o.Now().UTC()
	rules := e.o.Rules
	name, err := rules.ParseName(u.Name)
	if err != nil {
		return Claim{}, e.reject(ctx, u, err)
	}
	if len(name.Name)+len(resultSuffix) > claimcheck.MaxNameBytes {
		return Claim{}, e.reject(ctx, u, outcome.Reject("invalid blob name", fmt.Errorf("name of %d bytes: its result's name would be longer than %d", len(name.Name), claimcheck.MaxNameBytes)))
	}
	log := zerolog.Ctx(ctx).With().Str("tenant", name.Tenant).Logger()
	ctx = log.WithContext(ctx)
	if err := e.tenants.admit(ctx, name.Tenant, e.o.Alias); err != nil {
		if outcome.Of(err) == outcome.Rejected {
			return Claim{}, e.reject(ctx, u, err)
		}
		return Claim{}, err
	}
	policy := rules.Policy()
	switch {
	case u.Size <= 0:
		return Claim{}, e.reject(ctx, u, outcome.Reject(extract.ReasonEmpty, errors.New("0 bytes")))
	case u.Size > policy.MaxDocumentBytes:
		return Claim{}, e.reject(ctx, u, outcome.Reject(extract.ReasonTooLarge, fmt.Errorf("%d bytes, more than the limit of %d", u.Size, policy.MaxDocumentBytes)))
	}
	if _, err := extract.KindOf(name.Name, u.ContentType); err != nil {
		return Claim{}, e.reject(ctx, u, err)
	}
	if !force {
		st, err := e.o.Statuses.Get(ctx, name.Tenant, name.Name)
		if err != nil && !errors.Is(err, document.ErrNotFound) {
			return Claim{}, err
		}
		if err == nil && st.SameVersion(u.ETag) && st.State != document.Queued {
			log.Info().Str("state", string(st.State)).Msg("this version was enqueued before; nothing to do")
			return Claim{}, nil
		}
	}
	msg := claimcheck.Message{
		BlobURL:       rules.BlobURL(name),
		ETag:          strings.Trim(u.ETag, `"`),
		Size:          u.Size,
		ContentType:   u.ContentType,
		Tenant:        name.Tenant,
		ModelAlias:    e.o.Alias,
		CorrelationID: correlationID(u.Metadata),
	}
	body, err := rules.Encode(msg)
	if err != nil {
		return Claim{}, e.reject(ctx, u, err)
	}
	msg.Version = claimcheck.Version
	queue := rules.Route(msg)
	_, err = e.o.Statuses.Put(ctx, name.Name, document.Status{
		Tenant: name.Tenant, Name: name.Name, BlobURL: msg.BlobURL, ETag: msg.ETag, Size: msg.Size,
		ContentType: msg.ContentType, Alias: msg.ModelAlias, CorrelationID: msg.CorrelationID, Queue: queue,
		State: document.Queued, Enqueued: now,
	})
	if err != nil {
		return Claim{}, err
	}
	log.Info().Str("correlation_id", msg.CorrelationID).Str("queue", queue).Int64("size", msg.Size).Msg("document enqueued")
	return Claim{Queue: queue, Body: body, Message: msg}, nil
}

// reject records why u is rejected, under its tenant folder if it has a
// well-formed one, and returns cause (or the recording's failure).
func (e *Enqueuer) reject(ctx context.Context, u Upload, cause error) error {
	now := e.o.Now().UTC()
	partition := document.Unattributed
	if t, _, err := claimcheck.SplitTenant(u.Name); err == nil {
		partition = t
	}
	st := document.Status{
		Tenant: partition, Name: document.Printable(u.Name), ETag: strings.Trim(u.ETag, `"`), Size: u.Size,
		ContentType: clip(u.ContentType, 128), Alias: e.o.Alias, CorrelationID: correlationID(u.Metadata),
		State: document.Rejected, Reason: reason(cause), Enqueued: now, Finished: now,
	}
	if partition == document.Unattributed {
		st.Tenant = ""
	}
	if _, err := e.o.Statuses.Put(ctx, u.Name, st); err != nil {
		return fmt.Errorf("record the rejection (%s): %w", st.Reason, err)
	}
	return cause
}

// correlationID is the uploader's, if it set a valid one, else a new one.
func correlationID(md map[string]string) string {
	for k, v := range md {
		switch strings.ToLower(k) {
		case "correlation_id", "correlationid", "x_correlation_id":
			if validCorrelationID(v) {
				return v
			}
		}
	}
	return newCorrelationID()
}

// validCorrelationID matches claimcheck's rule: 1 to 128 of [A-Za-z0-9._:-].
func validCorrelationID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:-", c) >= 0) {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return document.Printable(s)
	}
	return document.Printable(s[:n])
}
