package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/extract"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/outcome"
)

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
	o          Options
	tenants    *tenantCache
	rejections *Rejections
}

// NewEnqueuer returns an Enqueuer; Options' Ledger and Models are not used,
// and of Blobs only Stat.
func NewEnqueuer(o Options) (*Enqueuer, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if o.Blobs == nil {
		return nil, errors.New("ingest: the enqueuer needs the blobs, to read what it enqueues")
	}
	tenants := &tenantCache{src: o.Tenants, ttl: o.TenantTTL, now: o.Now}
	return &Enqueuer{o: o, tenants: tenants, rejections: &Rejections{tenants: tenants, statuses: o.Statuses, alias: o.Alias, now: o.Now}}, nil
}

// Rules are the claim-check rules in force.
func (e *Enqueuer) Rules() *claimcheck.Rules { return e.o.Rules }

// Rejections records what the protocol layer rejects, by the same rules as
// the enqueuer's own rejections.
func (e *Enqueuer) Rejections() *Rejections { return e.rejections }

// Enqueue validates the blob name of the incoming container and returns
// its claim check. The blob's ETag, size, content type and metadata come
// from one Get Properties call on the blob itself, never from the trigger:
// it proves the blob still exists and pins the version the worker will
// read. A rejection is recorded (status rejected, with the reason) and
// returned as an outcome.Reject; any other error is transient (the trigger
// is retried). A version whose status is beyond queued already is a
// duplicate event and returns an empty Claim, unless force (an operator's
// reprocess) is set.
func (e *Enqueuer) Enqueue(ctx context.Context, blobName string, force bool) (Claim, error) {
	now := e.o.Now().UTC()
	rules := e.o.Rules
	// Read first, so that even a rejection names the version it is about.
	// The name is one escaped path segment of the incoming container
	// whatever it holds, so reading it can reach no other container.
	props, statErr := e.o.Blobs.Stat(ctx, blobName)
	name, err := rules.ParseName(blobName)
	if err != nil {
		return Claim{}, e.reject(ctx, blobName, props, err)
	}
	if len(name.Name)+len(resultSuffix) > claimcheck.MaxNameBytes {
		return Claim{}, e.reject(ctx, blobName, props, outcome.Reject("invalid blob name", fmt.Errorf("name of %d bytes: its result's name would be longer than %d", len(name.Name), claimcheck.MaxNameBytes)))
	}
	log := zerolog.Ctx(ctx).With().Str("tenant", name.Tenant).Logger()
	ctx = log.WithContext(ctx)
	if err := e.tenants.admit(ctx, name.Tenant, e.o.Alias); err != nil {
		if outcome.Of(err) == outcome.Rejected {
			return Claim{}, e.reject(ctx, blobName, props, err)
		}
		return Claim{}, err
	}
	switch {
	case errors.Is(statErr, object.ErrNotFound):
		return Claim{}, e.reject(ctx, blobName, props, outcome.Reject("blob is gone", statErr))
	case statErr != nil:
		return Claim{}, statErr
	}
	policy := rules.Policy()
	switch {
	case props.Size <= 0:
		return Claim{}, e.reject(ctx, blobName, props, outcome.Reject(extract.ReasonEmpty, errors.New("0 bytes")))
	case props.Size > policy.MaxDocumentBytes:
		return Claim{}, e.reject(ctx, blobName, props, outcome.Reject(extract.ReasonTooLarge, fmt.Errorf("%d bytes, more than the limit of %d", props.Size, policy.MaxDocumentBytes)))
	}
	if _, err := extract.KindOf(name.Name, props.ContentType); err != nil {
		return Claim{}, e.reject(ctx, blobName, props, err)
	}
	if !force {
		st, err := e.o.Statuses.Get(ctx, name.Tenant, name.Name)
		if err != nil && !errors.Is(err, document.ErrNotFound) {
			return Claim{}, err
		}
		if err == nil && st.SameVersion(props.ETag) && st.State != document.Queued {
			log.Info().Str("state", string(st.State)).Msg("this version was enqueued before; nothing to do")
			return Claim{}, nil
		}
	}
	corr := correlationOf(props.Metadata)
	msg := claimcheck.Message{
		BlobURL:       rules.BlobURL(name),
		ETag:          strings.Trim(props.ETag, `"`),
		Size:          props.Size,
		ContentType:   props.ContentType,
		Tenant:        name.Tenant,
		ModelAlias:    e.o.Alias,
		CorrelationID: corr.id,
	}
	body, err := rules.Encode(msg)
	if err != nil {
		return Claim{}, e.reject(ctx, blobName, props, err)
	}
	msg.Version = claimcheck.Version
	queue := rules.Route(msg)
	_, err = e.o.Statuses.Put(ctx, name.Name, document.Status{
		Tenant: name.Tenant, Name: name.Name, BlobURL: msg.BlobURL, ETag: msg.ETag, Size: msg.Size,
		ContentType: msg.ContentType, Alias: msg.ModelAlias, CorrelationID: msg.CorrelationID, CorrelationNote: corr.note,
		Queue: queue, State: document.Queued, Enqueued: now,
	})
	if err != nil {
		return Claim{}, err
	}
	if corr.note != "" {
		log.Warn().Str("correlation_id", msg.CorrelationID).Str("correlation_note", corr.note).Msg("the blob's correlation id was refused; a new one was generated")
	}
	log.Info().Str("correlation_id", msg.CorrelationID).Str("queue", queue).Int64("size", msg.Size).Msg("document enqueued")
	return Claim{Queue: queue, Body: body, Message: msg}, nil
}

// reject records why the blob name is rejected (with what is known of the
// blob) and returns cause, or the recording's failure.
func (e *Enqueuer) reject(ctx context.Context, blobName string, props object.Info, cause error) error {
	corr := correlationOf(props.Metadata)
	st := document.Status{ETag: strings.Trim(props.ETag, `"`), Size: props.Size, ContentType: clip(props.ContentType, 128),
		CorrelationID: corr.id, CorrelationNote: corr.note}
	if err := e.rejections.record(ctx, blobName, st, cause); err != nil {
		return err
	}
	return cause
}

// correlation is a document's correlation id and, when the blob's own was
// refused, why.
type correlation struct {
	id   string
	note string
}

// correlationOf takes the uploader's correlation id from the blob's
// metadata ("correlation_id", "correlationid" or "x_correlation_id"), or
// makes a new one. Blob metadata travels in HTTP headers, which Azure
// Storage takes as ASCII, so an uploader sends other text percent-encoded
// (UTF-8): a value with valid percent escapes that decodes to UTF-8 is
// decoded once ("Z%C3%BCrich" is "Zürich"); one without is taken as it is,
// which also admits raw UTF-8 where a store passes it through. An id that
// claimcheck.ValidCorrelationID refuses is replaced, and the note says so.
func correlationOf(md map[string]string) correlation {
	for _, key := range []string{"correlation_id", "correlationid", "x_correlation_id"} {
		v, ok := md[key]
		if !ok {
			continue
		}
		if strings.Contains(v, "%") {
			if dec, err := url.PathUnescape(v); err == nil && utf8.ValidString(dec) {
				v = dec
			}
		}
		if claimcheck.ValidCorrelationID(v) {
			return correlation{id: v}
		}
		why := "has control or format characters"
		switch {
		case !utf8.ValidString(v):
			why = "is not UTF-8"
		case utf8.RuneCountInString(v) > claimcheck.MaxCorrelationID:
			why = fmt.Sprintf("is longer than %d characters", claimcheck.MaxCorrelationID)
		case strings.TrimSpace(v) == "":
			why = "is blank"
		}
		return correlation{id: newCorrelationID(), note: fmt.Sprintf("generated: the blob's %s metadata %s", key, why)}
	}
	return correlation{id: newCorrelationID()}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return document.Printable(s)
	}
	return document.Printable(s[:n])
}
