package audit

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
)

// cleanup deletes offpath's leftovers, so that the resource stays far from
// its file caps: the files of offpath's ended batches, and offpath's input
// files, whose job is no longer active. A file is kept if any batch that
// has not ended names it, if a batch offpath did not create names it (it
// is evidence, and booking reads it), if it relates to an active job in
// any way, or if it is younger than MinAge. A failed delete is logged and
// tried again next run.
func (a *Auditor) cleanup(ctx context.Context, r *run) {
	log := zerolog.Ctx(ctx)
	keep := map[string]bool{}
	owner := map[string]string{} // file id → the inactive job it is left over from
	mark := func(m map[string]bool, ids ...string) {
		for _, id := range ids {
			if id != "" {
				m[id] = true
			}
		}
	}
	running := 0
	for _, b := range r.inv.batches {
		job, _, _, ours := b.Submission()
		ids := []string{b.InputFileID, b.OutputFileID, b.ErrorFileID}
		switch {
		case !ours || !b.Status.Terminal():
			mark(keep, ids...)
			if ours {
				running++
			}
		case r.inv.active[job] != "":
			mark(keep, ids...)
		default:
			for _, id := range ids {
				if id != "" {
					owner[id] = job
				}
			}
		}
	}
	for _, rec := range r.inv.seen[KindBatch] {
		mark(keep, rec.InputFileID, rec.OutputFileID, rec.ErrorFileID)
	}
	for _, f := range r.inv.files {
		switch job := offpathInput(f); {
		case job == "":
		case r.inv.active[job] != "":
			keep[f.ID] = true
		default:
			owner[f.ID] = job
		}
	}
	if running > 0 && len(r.inv.active) == 0 {
		// offpath's batches are running, so their jobs are active: an empty
		// index means it was not read where the poller writes it.
		log.Warn().Int("running_batches", running).
			Msg("offpath's batches are running but no job is active: the active-job index looks wrong; no file deleted")
		return
	}
	for _, f := range r.inv.files {
		job, ok := owner[f.ID]
		if !ok || keep[f.ID] || !old(f, r.inv.now, a.o.MinAge) {
			continue
		}
		err := a.o.Azure.DeleteFile(ctx, f.ID)
		switch {
		case errors.Is(err, batch.ErrAzureNotFound):
		case err != nil:
			log.Warn().Err(err).Str("file_id", f.ID).Str("job", job).Msg("offpath leftover file not deleted; retried next run")
			r.sum.Errors++
		default:
			log.Info().Str("file_id", f.ID).Str("job", job).Str("filename", f.Filename).Str("purpose", f.Purpose).
				Msg("offpath leftover file deleted")
			r.sum.Deleted++
		}
	}
}

// offpathInput returns the job id of an input file offpath uploaded:
// purpose "batch", named {job}.part{N}.jsonl or, for a part moved to
// another deployment, {job}.part{N}.{deployment}.jsonl (package batch's upload) with
// a well-formed job id; "" for any other file.
func offpathInput(f batch.AzureFile) string {
	if f.Purpose != "batch" {
		return ""
	}
	name, ok := strings.CutSuffix(f.Filename, ".jsonl")
	if !ok {
		return ""
	}
	job, part, ok := strings.Cut(name, ".part")
	if n, dep, moved := strings.Cut(part, "."); moved {
		// {job}.part{N}.{deployment}.jsonl: a part moved to another
		// deployment than its input was written for.
		if !catalog.ValidDeployment(dep) {
			return ""
		}
		part = n
	}
	if !ok || !batch.ValidJobID(job) || part == "" || len(part) > 4 {
		return ""
	}
	if n, err := strconv.Atoi(part); err != nil || n < 0 || strconv.Itoa(n) != part {
		return ""
	}
	return job
}
