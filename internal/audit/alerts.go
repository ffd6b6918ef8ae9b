package audit

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/batch"
)

// alertBatch raises second_door, or batch_orphaned, for b and returns its
// record.
func (a *Auditor) alertBatch(ctx context.Context, r *run, b batch.AzureBatch, name string) Record {
	now := r.inv.now
	in := a.inputFile(ctx, r, b.InputFileID)
	fields := map[string]any{
		"kind": string(KindBatch), "batch_id": b.ID, "created_at": stamp(b.CreatedAt), "status": string(b.Status),
		"endpoint": b.Endpoint, "input_file_id": b.InputFileID, "input_bytes": in.Bytes,
		"request_total": b.RequestCounts.Total, "request_completed": b.RequestCounts.Completed, "request_failed": b.RequestCounts.Failed,
	}
	if in.Filename != "" {
		fields["input_filename"] = in.Filename
	}
	if b.OutputFileID != "" {
		fields["output_file_id"] = b.OutputFileID
	}
	if b.ErrorFileID != "" {
		fields["error_file_id"] = b.ErrorFileID
	}
	msg := "a batch on the Azure OpenAI resource was not created by offpath; its usage is booked to tenant " + Unattributed + " once it ends"
	if name == AlertOrphan {
		job, part, attempt, _ := b.Submission()
		fields["offpath_job"], fields["offpath_part"], fields["offpath_attempt"] = job, part, attempt
		if t := b.Metadata["tenant"]; t != "" {
			fields["tenant"] = t
		}
		msg = "a batch carries offpath's submission key but no job claims it (its job record was lost or moved on); " +
			"its usage is booked to the tenant its metadata names, else " + Unattributed + ", once it ends"
		if b.Metadata["tenant"] == batch.PackTenant {
			msg = "an offpath pack (several tenants' jobs in one batch) has lost its record; once it ends, each of its lines is booked to " +
				"the tenant of the job it names, and the lines whose job is not found to " + Unattributed + "; its record's note says how many went where"
		}
	}
	a.o.Alerts.Raise(ctx, alert.Alert{Name: name, At: now, Fields: fields, Message: msg})
	return Record{Kind: KindBatch, ID: b.ID, AlertedAt: now, CreatedAt: b.CreatedAt, Status: string(b.Status),
		InputFileID: b.InputFileID, OutputFileID: b.OutputFileID, ErrorFileID: b.ErrorFileID}
}

// inputFile describes a batch's input file from the listing, or by asking
// Azure when the listing missed it; Bytes is -1 when it is gone (or could
// not be read: the alert goes out regardless).
func (a *Auditor) inputFile(ctx context.Context, r *run, id string) batch.AzureFile {
	if id == "" {
		return batch.AzureFile{Bytes: -1}
	}
	if f, ok := r.inv.byID[id]; ok {
		return f
	}
	f, err := a.o.Azure.GetFile(ctx, id)
	if err != nil {
		if !errors.Is(err, batch.ErrAzureNotFound) {
			zerolog.Ctx(ctx).Warn().Err(err).Str("file_id", id).Msg("input file of a second-door batch not read")
		}
		return batch.AzureFile{ID: id, Bytes: -1}
	}
	return f
}

// strayFiles alerts on every file that offpath did not upload, that no
// batch (listed now, or alerted before) names, and that is older than
// MinAge, once. An unknown batch's files are named in its own alert.
func (a *Auditor) strayFiles(ctx context.Context, r *run) {
	claimed := r.claimed()
	seen := r.inv.seen[KindFile]
	for _, f := range r.inv.files {
		if claimed[f.ID] || offpathInput(f) != "" {
			continue
		}
		if _, known := seen[f.ID]; known {
			continue
		}
		if !old(f, r.inv.now, a.o.MinAge) {
			continue // a batch may be about to be created on it
		}
		rec := Record{Kind: KindFile, ID: f.ID, AlertedAt: r.inv.now, CreatedAt: f.CreatedAt,
			Filename: f.Filename, Purpose: f.Purpose, Bytes: f.Bytes}
		a.o.Alerts.Raise(ctx, alert.Alert{Name: AlertSecondDoor, At: r.inv.now,
			Message: "a file on the Azure OpenAI resource was not uploaded by offpath and belongs to no batch",
			Fields: map[string]any{"kind": string(KindFile), "file_id": f.ID, "filename": f.Filename, "purpose": f.Purpose,
				"bytes": f.Bytes, "created_at": stamp(f.CreatedAt)}})
		r.sum.FilesAlerted++
		if err := a.o.Store.Put(ctx, rec); err != nil {
			zerolog.Ctx(ctx).Error().Err(err).Str("file_id", f.ID).Msg("second-door file alerted but not recorded; it is alerted again next run")
			r.sum.Errors++
		}
		seen[f.ID] = rec
	}
}

// claimed returns the ids of every file a batch names: a batch listed now,
// or one alerted before (whose listing entry may be gone).
func (r *run) claimed() map[string]bool {
	out := map[string]bool{}
	add := func(ids ...string) {
		for _, id := range ids {
			if id != "" {
				out[id] = true
			}
		}
	}
	for _, b := range r.inv.batches {
		add(b.InputFileID, b.OutputFileID, b.ErrorFileID)
	}
	for _, rec := range r.inv.seen[KindBatch] {
		add(rec.InputFileID, rec.OutputFileID, rec.ErrorFileID)
	}
	return out
}

// old reports whether f is at least minAge old; a file without a created
// time is young.
func old(f batch.AzureFile, now time.Time, minAge time.Duration) bool {
	return !f.CreatedAt.IsZero() && now.Sub(f.CreatedAt) >= minAge
}

// stamp renders a time for an alert, or "" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
