package audit

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
)

// inventory is what one run read before it acts: the resource's files and
// batches, then the active jobs, then the audit's own records.
type inventory struct {
	now     time.Time
	files   []batch.AzureFile
	byID    map[string]batch.AzureFile
	batches []batch.AzureBatch
	active  map[string]string // job id → tenant
	seen    map[Kind]map[string]Record
}

// Run is one audit: it lists the resource, alerts on batches and files
// offpath did not create (once each), books the usage of those batches
// once they have ended, and deletes offpath's own leftovers. A failure to
// list or to read offpath's records is returned (nothing was done; the
// next run starts over); a failure on one batch or file is logged and
// counted, and the run goes on. A run cut short by ctx returns what it did
// with ctx's error.
func (a *Auditor) Run(ctx context.Context) (Summary, error) {
	inv, err := a.read(ctx)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Batches: len(inv.batches), Files: len(inv.files)}
	r := &run{inv: inv, sum: &sum}
	a.batches(ctx, r)
	a.strayFiles(ctx, r)
	a.cleanup(ctx, r)
	zerolog.Ctx(ctx).Info().Str("event", "batch_audit").
		Int("batches", sum.Batches).Int("offpath_batches", sum.Offpath).Int("orphaned_batches", sum.Orphans).Int("unknown_batches", sum.Unknown).
		Int("batches_alerted", sum.Alerted).Int("batches_booked", sum.Booked).
		Int("files", sum.Files).Int("files_alerted", sum.FilesAlerted).Int("files_deleted", sum.Deleted).
		Int("errors", sum.Errors).Msg("second-door audit done")
	if err := ctx.Err(); err != nil {
		return sum, wrap("cut short", err)
	}
	return sum, nil
}

// batches alerts on every batch offpath did not create that was never
// alerted, and books those that have ended and were never booked.
func (a *Auditor) batches(ctx context.Context, r *run) {
	seen := r.inv.seen[KindBatch]
	for _, b := range r.inv.batches {
		log := zerolog.Ctx(ctx).With().Str("batch_id", b.ID).Logger()
		rec, known := seen[b.ID]
		_, _, _, keyed := b.Submission()
		if keyed && !known {
			c, err := a.whose(ctx, r, b)
			if err != nil {
				log.Warn().Err(err).Msg("job of an offpath batch not read; judged next run")
				r.sum.Errors++
				r.sum.Offpath++
				continue
			}
			if c == claimed {
				r.sum.Offpath++
				continue
			}
		}
		if keyed {
			r.sum.Orphans++
		} else {
			r.sum.Unknown++
		}
		if !known {
			// Alert first, then remember: a crash in between alerts again
			// next run, never not at all.
			if keyed {
				rec = a.alertOrphan(ctx, r, b)
			} else {
				rec = a.alertBatch(ctx, r, b, AlertSecondDoor)
			}
			r.sum.Alerted++
			if err := a.o.Store.Put(ctx, rec); err != nil {
				log.Error().Err(err).Msg("second-door batch alerted but not recorded; it is alerted again next run")
				r.sum.Errors++
			}
			seen[b.ID] = rec
		}
		if !rec.BookedAt.IsZero() || !b.FilesReady() {
			continue
		}
		booked, err := a.book(log.WithContext(ctx), r, b, rec)
		if err != nil {
			log.Warn().Err(err).Msg("second-door batch not booked; retried next run")
			r.sum.Errors++
			continue
		}
		if err := a.o.Store.Put(ctx, booked); err != nil {
			// The ledger row is written; booking again next run rewrites it.
			log.Error().Err(err).Msg("second-door batch booked but not recorded; booked again next run")
			r.sum.Errors++
			continue
		}
		seen[b.ID] = booked
		r.sum.Booked++
	}
}

// run is the state of one Run.
type run struct {
	inv *inventory
	sum *Summary
	// tenantReady is set once the Unattributed tenant is known to exist.
	tenantReady bool
	// jobs are the jobs read to judge offpath's batches, by id.
	jobs map[string]batch.Job
}

// read lists files, then batches, then the active jobs, in that order.
// Files before batches: a batch created between the two listings is
// listed and claims its input file, so a file never looks stray because
// its batch came late. Both before the active jobs: a job is marked active
// before anything of it is uploaded, so a job marked after the read cannot
// own a file listed before it.
func (a *Auditor) read(ctx context.Context) (*inventory, error) {
	inv := &inventory{now: a.now(), byID: map[string]batch.AzureFile{}, active: map[string]string{}, seen: map[Kind]map[string]Record{}}
	for f, err := range a.o.Azure.ListFiles(ctx, "") {
		if err != nil {
			return nil, wrap("list files", err)
		}
		if _, dup := inv.byID[f.ID]; dup {
			continue // a page boundary moved under the listing
		}
		inv.files = append(inv.files, f)
		inv.byID[f.ID] = f
	}
	ids := map[string]bool{}
	for b, err := range a.o.Azure.ListBatches(ctx) {
		if err != nil {
			return nil, wrap("list batches", err)
		}
		if !ids[b.ID] {
			ids[b.ID] = true
			inv.batches = append(inv.batches, b)
		}
	}
	refs, err := a.o.Active.ListActive(ctx)
	if err != nil {
		return nil, wrap("list active jobs", err)
	}
	for _, r := range refs {
		inv.active[r.ID] = r.Tenant
	}
	for _, k := range []Kind{KindBatch, KindFile} {
		recs, err := a.o.Store.Load(ctx, k)
		if err != nil {
			return nil, wrap("load "+string(k)+" records", err)
		}
		if recs == nil {
			recs = map[string]Record{}
		}
		inv.seen[k] = recs
	}
	return inv, nil
}
