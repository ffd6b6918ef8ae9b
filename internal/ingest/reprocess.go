package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/object"
)

// Reprocess puts a dead-lettered document back on the queue path through
// the door every document takes: its blob is written again, unchanged
// (Blobs.Redrop), so the blob trigger fires for the new version and
// the enqueue function checks it and sends a new claim check, as for any
// upload, in Azure (Event Grid) as locally (the container scan). The status
// says queued for the new version at once; the ledger keeps the failed
// attempts under the old version's units. Tenant partition and name are
// the status's. Errors: document.ErrNotFound, ErrNotDeadLettered, ErrChanged.
func (e *Enqueuer) Reprocess(ctx context.Context, partition, name string) (document.Status, error) {
	st, err := e.o.Statuses.Get(ctx, partition, name)
	if err != nil {
		return document.Status{}, err
	}
	if st.State != document.DeadLettered {
		return st, fmt.Errorf("%s is %s: %w", document.Printable(name), st.State, document.ErrNotDeadLettered)
	}
	props, err := e.o.Blobs.Redrop(ctx, name, st.ETag)
	switch {
	case errors.Is(err, object.ErrNotFound), errors.Is(err, object.ErrChanged):
		return st, fmt.Errorf("%s: %w", document.Printable(name), document.ErrChanged)
	case err != nil:
		return document.Status{}, fmt.Errorf("reprocess %s: %w", document.Printable(name), err)
	}
	old := st.ETag
	now := e.o.Now().UTC()
	out, err := e.o.Statuses.Update(ctx, partition, name, func(st *document.Status, found bool) (bool, error) {
		if !found || !st.SameVersion(old) || st.State != document.DeadLettered {
			return false, nil // the enqueue got there first
		}
		*st = document.Status{Tenant: st.Tenant, Name: st.Name, BlobURL: st.BlobURL, ETag: strings.Trim(props.ETag, `"`),
			Size: props.Size, ContentType: props.ContentType, Alias: st.Alias, CorrelationID: st.CorrelationID,
			CorrelationNote: st.CorrelationNote, Queue: st.Queue, State: document.Queued,
			Reason: "reprocess of version " + old + ", dead-lettered: " + st.Reason, Enqueued: now}
		return true, nil
	})
	if err != nil {
		return document.Status{}, fmt.Errorf("reprocess %s: the blob is written again, its status not yet: %w", document.Printable(name), err)
	}
	zerolog.Ctx(ctx).Info().Str("tenant", partition).Str("correlation_id", out.CorrelationID).Str("etag", out.ETag).
		Str("previous_etag", old).Msg("dead-lettered document written again for reprocessing")
	return out, nil
}
