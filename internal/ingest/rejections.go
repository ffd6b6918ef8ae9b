package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tenant"
)

// Rejections records input that can never succeed in the document
// statuses, as state rejected with its reason: a blob name under the tenant
// its first segment names when that tenant exists, and under
// document.Unattributed otherwise; a claim check or an invocation that
// names no document it may touch under document.Unattributed, never under a
// tenant, whose records such a message must not be able to change. It is
// also the protocol layer's invoke.Recorder, so that an invocation whose
// data cannot be decoded is recorded by the same rules.
type Rejections struct {
	tenants  *tenantCache
	statuses Statuses
	alias    string
	now      func() time.Time
}

// NewRejections returns Rejections over tenants and statuses, for a
// handler whose queue path is not configured (an Enqueuer has its own).
func NewRejections(tenants Tenants, statuses Statuses) *Rejections {
	return &Rejections{tenants: &tenantCache{src: tenants, ttl: DefaultTenantTTL, now: time.Now}, statuses: statuses, now: time.Now}
}

// RecordRejection implements invoke.Recorder. The enqueue function's
// rejection is recorded under the blob's name when the envelope names it;
// the process functions' under their message; any other under the
// invocation. The protocol layer logs the reason.
func (r *Rejections) RecordRejection(ctx context.Context, rej invoke.Rejection) error {
	cause := outcome.Reject("undecodable invocation", errors.New(rej.Reason))
	switch rej.Function {
	case EnqueueFunction:
		if b, _ := rej.Request.Blob(BlobBinding); b.Name != "" {
			return r.record(ctx, b.Name, document.Status{}, cause)
		}
	case ProcessFunction, ProcessHeavyFunction:
		m, _ := rej.Request.ServiceBus(MessageBinding)
		_, err := r.recordMessage(ctx, Delivery{Body: m.Body, MessageID: m.MessageID, DeliveryCount: m.DeliveryCount, EnqueuedTime: m.EnqueuedTime}, cause)
		if outcome.Of(err) == outcome.Rejected {
			return nil
		}
		return err
	}
	key := "invocation " + rej.Function + " " + rej.InvocationID
	return r.put(ctx, key, document.Status{Name: document.Printable(key), State: document.Rejected, Reason: reason(cause)})
}

// record writes the rejection of blobName, with what st knows of the blob.
func (r *Rejections) record(ctx context.Context, blobName string, st document.Status, cause error) error {
	partition, err := r.partition(ctx, blobName)
	if err != nil {
		return fmt.Errorf("record the rejection (%s): %w", reason(cause), err)
	}
	st.Tenant, st.Name, st.Alias = partition, document.Printable(blobName), r.alias
	st.State, st.Reason = document.Rejected, reason(cause)
	if st.CorrelationID == "" {
		st.CorrelationID = newCorrelationID()
	}
	if err := r.put(ctx, blobName, st); err != nil {
		return fmt.Errorf("record the rejection (%s): %w", st.Reason, err)
	}
	return nil
}

// partition is the tenant blobName's first segment names if it exists, ""
// (unattributed) if it does not or there is none.
func (r *Rejections) partition(ctx context.Context, blobName string) (string, error) {
	id, _, err := claimcheck.SplitTenant(blobName)
	if err != nil {
		return "", nil
	}
	if _, err := r.tenants.get(ctx, id); errors.Is(err, tenant.ErrNotFound) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	return id, nil
}

// recordMessage records a claim check that names no document it may touch
// (undecodable, malformed, outside the incoming container, another
// tenant's folder), unattributed, and returns cause or the recording's
// failure.
func (r *Rejections) recordMessage(ctx context.Context, d Delivery, cause error) (document.Status, error) {
	key := "message " + d.MessageID
	if d.MessageID == "" {
		sum := sha256.Sum256(d.Body)
		key = "message sha256:" + hex.EncodeToString(sum[:16])
	}
	st := document.Status{
		Name: document.Printable(key), Size: int64(len(d.Body)), Queue: d.Queue, State: document.Rejected,
		Reason: reason(cause), Deliveries: d.DeliveryCount, Enqueued: d.EnqueuedTime.UTC(),
	}
	if err := r.put(ctx, key, st); err != nil {
		return st, fmt.Errorf("record the rejected message (%s): %w", reason(cause), err)
	}
	return st, cause
}

// put stores st as finished now.
func (r *Rejections) put(ctx context.Context, key string, st document.Status) error {
	now := r.now().UTC()
	if st.Enqueued.IsZero() {
		st.Enqueued = now
	}
	st.Finished = now
	_, err := r.statuses.Put(ctx, key, st)
	return err
}
