package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/outcome"
)

// admitPart uploads a part's input (once) and creates its Azure batch,
// under the job's lease. It returns ErrQuotaFull when Azure
// refuses for quota, nil when the batch exists.
func (s *Service) admitPart(ctx context.Context, t *tick, c candidate) error {
	log := zerolog.Ctx(ctx).With().Str("job", c.job.ID).Str("tenant", c.job.Tenant).Int("part", c.part).Logger()
	ctx = log.WithContext(ctx)
	i := c.part
	maybe, empty := false, false
	j, err := s.update(ctx, *c.job, func(j *Job) error {
		now := s.now()
		p := &j.Parts[i]
		if j.leasedByOther(t.owner, now) {
			return errLeaseLost
		}
		if p.Status != PartPending || j.CancelRequested {
			return errSkipAdmit
		}
		if empty = j.Pack != nil && !sealPack(j, p, now); empty {
			return nil // every member left: the pack ends unsent
		}
		maybe = p.MaybeCreated
		if target := c.target(); target != p.Deployment {
			move(j, p, target, maybe)
			maybe = false // under its new name, nothing was uploaded yet
		}
		p.Placement, p.PlacementDetail = c.reason, clipMessage(c.why)
		p.MaybeCreated = true // a create may be under way from here on
		j.Lease = Lease{Owner: t.owner, Until: now.Add(s.o.LeaseTTL)}
		return nil
	})
	if err != nil {
		if errors.Is(err, errSkipAdmit) || errors.Is(err, errLeaseLost) {
			return err
		}
		return fmt.Errorf("claim: %w", err)
	}
	if empty {
		return errSkipAdmit
	}
	p := j.Parts[i]
	fileID := p.InputFileID
	uploading := fileID == ""
	if uploading && j.Pack != nil {
		err = s.buildPack(ctx, &j, &p)
	}
	if uploading && err == nil {
		if fileID, err = s.inputFile(ctx, &j, &p, maybe); err == nil {
			j, err = s.recordInputFile(ctx, t, j, i, fileID)
		}
	}
	var created Created
	createCalled := err == nil
	if createCalled {
		// Always looked up first: a batch is this part's if it carries the
		// part's submission key, whatever this row remembers, and the row
		// may be stale. Since bounds the lookup to the job's lifetime.
		created, err = s.o.Azure.CreateBatch(ctx, Submission{InputFileID: fileID, JobID: j.ID, Part: p.Index,
			Attempt: p.Attempt, MaybeCreated: true, Since: j.Created,
			Metadata: map[string]string{"tenant": j.Tenant, "alias": j.Alias, metaDeployment: p.Deployment}})
		if err != nil {
			err = fmt.Errorf("%w: %w", errCreate, err)
		}
	}
	extra := ""
	if err == nil && created.Batch.InputFileID != "" && created.Batch.InputFileID != fileID {
		// Found by its key on a file uploaded before this one (its reply
		// was lost, or this row forgot it): that is the part's file.
		extra, fileID = fileID, created.Batch.InputFileID
	}
	var events []partEvent
	stored, uerr := s.update(ctx, j, func(j *Job) error {
		events = events[:0]
		if j.Lease.Owner != t.owner && j.leasedByOther(t.owner, s.now()) {
			return errLeaseLost
		}
		j.Lease = Lease{}
		q := &j.Parts[i]
		if q.Status != PartPending {
			if err == nil && q.Status == PartDone && q.BatchID == "" {
				// Cancelled while the batch was being created: record it
				// as submitted, so that the next tick cancels it at Azure
				// and harvests what it did. It must not be lost.
				q.Status, q.AzureStatus, q.FinishedAt = PartSubmitted, created.Batch.Status, time.Time{}
				q.BatchID, q.InputFileID, q.SubmittedAt, q.MaybeCreated = created.Batch.ID, fileID, s.now(), false
			}
			return nil
		}
		if fileID != "" {
			q.InputFileID = fileID
		}
		if d := created.Batch.Metadata[metaDeployment]; err == nil && created.Recovered && d != "" && d != q.Deployment {
			// Found by its key: an earlier attempt's create landed at the
			// deployment the part was tried on before.
			q.Deployment = d
		}
		if !createCalled && !uploading {
			// Neither an upload nor a create was sent: nothing can have
			// happened at Azure. (After an upload, its file may exist.)
			q.MaybeCreated = maybe
		}
		if ev := s.applyCreate(q, created, err); ev != "" {
			events = append(events, partEvent{i, ev})
		}
		return nil
	})
	if uerr != nil {
		log.Error().Err(uerr).Str("batch_id", created.Batch.ID).Msg("admission not recorded; the next tick finds the batch by its metadata")
	} else {
		s.announce(ctx, &stored, events)
	}
	if err != nil {
		if errors.Is(err, ErrAzureAuth) {
			s.authAlert(ctx, t, err)
		}
		log.Warn().Err(err).Msg("part not admitted")
		return err
	}
	if uerr == nil {
		p = stored.Parts[i]
	}
	log.Info().Str("batch_id", created.Batch.ID).Str("deployment", p.Deployment).Int64("estimated_tokens", p.EstimatedTokens).
		Str("placement", p.Placement).Str("placement_detail", p.PlacementDetail).
		Bool("recovered", created.Recovered).Msg("batch part submitted")
	if s.o.Decisions != nil {
		s.o.Decisions.Placed(j.Alias, p.Deployment, p.Placement)
	}
	if extra != "" && uerr == nil {
		if derr := s.o.Azure.DeleteFile(ctx, extra); derr != nil && !errors.Is(derr, ErrAzureNotFound) {
			log.Warn().Err(derr).Str("file_id", extra).Msg("extra input file not deleted; the audit deletes it once the job has ended")
		}
	}
	return uerr
}

var errSkipAdmit = errors.New("part no longer pending")

// inputFile returns the Azure file of the part's input: when an earlier
// admission may have uploaded it (its reply lost, or the process stopped
// before recording it), the newest file with the part's name and size, if
// Azure processed it; else a new upload.
func (s *Service) inputFile(ctx context.Context, j *Job, p *Part, maybe bool) (string, error) {
	if maybe {
		f, ok, err := s.o.Azure.FindFile(ctx, uploadName(j.ID, p))
		if err != nil {
			return "", fmt.Errorf("look up an earlier upload: %w", err)
		}
		if ok && f.Bytes == p.uploadBytes() && f.Status != "error" {
			if f, err = s.o.Azure.AwaitFile(ctx, f.ID, time.Second); err == nil {
				zerolog.Ctx(ctx).Info().Str("file_id", f.ID).Msg("input file of an earlier admission found; not uploaded again")
				return f.ID, nil
			}
			if outcome.Of(err) != outcome.Rejected {
				return "", err
			}
		}
	}
	return s.upload(ctx, j, p)
}

// recordInputFile writes the part's input file id before the create is
// sent, so that whatever happens to the create's reply, the row knows the
// file (and the submission key: job, part, attempt) the batch is made of.
func (s *Service) recordInputFile(ctx context.Context, t *tick, j Job, i int, fileID string) (Job, error) {
	stored, err := s.update(ctx, j, func(j *Job) error {
		if j.Lease.Owner != t.owner && j.leasedByOther(t.owner, s.now()) {
			return errLeaseLost
		}
		if q := &j.Parts[i]; q.Status == PartPending && q.InputFileID == "" {
			q.InputFileID = fileID
		}
		return nil
	})
	if err != nil {
		return j, fmt.Errorf("record input file %s: %w", fileID, err)
	}
	return stored, nil
}

// metaDeployment is the batch metadata key naming the deployment a part
// was submitted to, so that a batch found by its submission key tells where
// it runs.
const metaDeployment = "deployment"

// upload sends the part's stored input to Azure and waits until the file
// is processed. A part moved to another deployment than its input was
// written for is sent with that deployment's name in every line.
func (s *Service) upload(ctx context.Context, j *Job, p *Part) (string, error) {
	stored, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Inputs, p.InputBlob)
	if err != nil {
		return "", fmt.Errorf("open input: %w", err)
	}
	defer stored.Close()
	var body io.Reader = stored
	if p.WrittenFor != "" && p.WrittenFor != p.Deployment {
		body = batchfile.Retarget(stored, p.WrittenFor, p.Deployment)
	}
	f, err := s.o.Azure.UploadFile(ctx, uploadName(j.ID, p), body, p.uploadBytes())
	if err != nil {
		return "", err
	}
	if f, err = s.o.Azure.AwaitFile(ctx, f.ID, time.Second); err != nil {
		return "", err
	}
	return f.ID, nil
}

// applyCreate records the outcome of an admission attempt on the part.
func (s *Service) applyCreate(p *Part, c Created, err error) string {
	now := s.now()
	var qe *QuotaError
	switch {
	case err == nil:
		b := c.Batch
		p.Status, p.BatchID, p.SubmittedAt, p.PolledAt = PartSubmitted, b.ID, now, now
		p.AzureStatus, p.AzureExpiry, p.MaybeCreated, p.NextAttemptAt = b.Status, b.ExpiresAt, false, time.Time{}
		if c.MaxEnqueuedTokens > 0 {
			p.MaxEnqueuedTokens = c.MaxEnqueuedTokens
		}
		if b.Status.Terminal() {
			return s.applyBatch(p, b)
		}
	case errors.As(err, &qe):
		if qe.MaxEnqueuedTokens > 0 {
			p.MaxEnqueuedTokens = qe.MaxEnqueuedTokens
		}
		p.BatchID = ""
		s.requeue(p, "token_limit_exceeded")
		p.Attempt-- // nothing was created: the same attempt may be used again
	case errors.Is(err, ErrAmbiguous):
		p.HeldReason, p.NextAttemptAt = "retry", now.Add(s.backoff(1))
	case errors.Is(err, ErrAzureNotFound):
		// The input file expired or was deleted: upload it again.
		p.InputFileID, p.MaybeCreated = "", false
		p.HeldReason, p.NextAttemptAt = "retry", now.Add(s.backoff(1))
	case outcome.Of(err) == outcome.Rejected:
		p.MaybeCreated = false
		p.Status, p.AzureStatus, p.FinishedAt = PartDone, AzureFailed, now
		p.Errors = []BatchError{{Code: "create_rejected", Message: clipMessage(err.Error())}}
		return AlertFailed
	default:
		p.HeldReason, p.NextAttemptAt = "retry", now.Add(s.backoff(p.Refusals+1))
	}
	if p.HeldSince.IsZero() && p.Status == PartPending {
		p.HeldSince = now
	}
	return ""
}
