package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offpath/offpath/internal/batch"
)

// AnnounceStore is what an Announcer needs of the Store.
type AnnounceStore interface {
	// Endpoint returns a tenant's endpoint, or ErrNotFound.
	Endpoint(ctx context.Context, tenantID string) (Endpoint, error)
	AddEvent(ctx context.Context, e Event) error
}

// Announcer records a job's event as the batch control plane harvests it
// finds it held too long, or starts its deadline fallback (it is
// batch.Options' Announcer), however old
// the job is: the
// Dispatcher's scan looks only at the jobs of its scan window, so a job
// that ends long after it was created (held for quota, say) is found this
// way. The Dispatcher delivers the event like any other. Recording twice
// records once, so the scan finding the job too changes nothing.
type Announcer struct {
	store AnnounceStore
	now   func() time.Time
}

// NewAnnouncer returns an Announcer on store (now defaults to time.Now).
func NewAnnouncer(store AnnounceStore, now func() time.Time) *Announcer {
	if now == nil {
		now = time.Now
	}
	return &Announcer{store: store, now: now}
}

// Announce records the event of the harvested, held or falling back job j if its tenant
// has an endpoint registered before the job was made.
func (a *Announcer) Announce(ctx context.Context, j batch.Job) error {
	ep, err := a.store.Endpoint(ctx, j.Tenant)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("announce job %s: %w", j.ID, err)
	}
	e, ok, err := ep.event(&j, a.now(), DefaultHeldAfter)
	if err != nil || !ok {
		return err
	}
	if err := a.store.AddEvent(ctx, e); err != nil {
		return fmt.Errorf("announce job %s: %w", j.ID, err)
	}
	return nil
}
