package aoaisim

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// batchRun is the worker of one batch job: one goroutine per job, driven by
// the simulated clock. Transition times are nominal (computed from the
// configured durations and rate), so a frozen clock advanced by hand gives
// the same timestamps as a fast one.
type batchRun struct {
	s     *Server
	b     *batch
	log   zerolog.Logger
	input *os.File
	rec   *fileRecord
}

// runBatch drives b from validating to a terminal state.
func (s *Server) runBatch(b *batch) {
	defer s.workers.Done()
	r := &batchRun{s: s, b: b, log: s.log.With().Str("batch_id", b.ID).Logger()}
	defer r.closeInput()
	defer s.gate.pass(b.ticket) // also when the job ends before its quota decision
	if err := r.run(s.lifetime); err != nil && s.lifetime.Err() == nil {
		r.log.Error().Err(err).Msg("batch worker")
		r.fail([]batchError{{Code: "internal_error", Message: "The batch could not be processed by the simulator."}}, s.clock.Now())
	}
}

func (r *batchRun) closeInput() {
	if r.input != nil {
		_ = r.input.Close()
	}
}

// status reads the batch status under the store lock.
func (r *batchRun) status() string {
	var st string
	r.s.batches.update(r.b, func(b *batch) { st = b.Status })
	return st
}

func (r *batchRun) run(ctx context.Context) error {
	s, b := r.s, r.b
	hold := s.faults.holdValidating(b.Deployment)
	validatedAt := b.CreatedAt.Add(s.cfg.Batch.ValidationTime.D() + hold)
	expiring := hold > 0 && s.cfg.Batch.Expiry == ExpiryExpire && validatedAt.After(b.ExpiresAt)
	if expiring {
		validatedAt = b.ExpiresAt
	}
	for {
		if err := s.clock.WaitUntil(ctx, validatedAt, b.wake); err != nil {
			return nil // server closing
		}
		if r.status() == statusCancelling {
			return r.cancel(ctx, nil, 0)
		}
		if !s.clock.Now().Before(validatedAt) {
			break
		}
	}
	rec, f, err := s.files.open(b.InputFileID, s.clock.Now())
	if err != nil {
		r.fail([]batchError{{Code: "invalid_request", Message: fmt.Sprintf("The input file %s no longer exists.", b.InputFileID)}}, validatedAt)
		return nil
	}
	r.input, r.rec = f, rec
	if expiring { // the window closed while the job was still validating
		w, err := newOutputWriter(s.files, s.cfg.Batch.ShuffleWindow, seedOf([]byte(b.ID)))
		if err != nil {
			return fmt.Errorf("open output: %w", err)
		}
		return r.expire(w, bufio.NewReaderSize(f, 256<<10), nil, lineProgress{})
	}
	v, err := s.validateInput(f, rec, b.Endpoint)
	if err != nil {
		return fmt.Errorf("validate input: %w", err)
	}
	if len(v.errs) > 0 {
		r.fail(v.errs, validatedAt)
		return nil
	}
	dep := s.deps[v.deployment]
	if err := s.gate.wait(ctx, b.ticket); err != nil {
		return nil // server closing
	}
	var inUse int64
	admitted := true
	if dep.cfg.QuotaBehaviour == QuotaFailAtValidation {
		if inUse, admitted = s.reserve(dep, b.EstimatedTokens); admitted {
			s.batches.update(b, func(b *batch) { b.Reserved = b.EstimatedTokens })
		}
	}
	s.gate.pass(b.ticket)
	if !admitted {
		r.fail([]batchError{{Code: "token_limit_exceeded", Message: tokenLimitMessage(dep, b.EstimatedTokens, inUse)}}, validatedAt)
		return nil
	}
	started := false
	s.batches.update(b, func(b *batch) {
		if b.Status == statusValidating {
			b.Status, b.InProgressAt, b.Total, started = statusInProgress, validatedAt, v.lines, true
		}
	})
	if !started { // cancelled during validation
		return r.cancel(ctx, nil, 0)
	}
	r.log.Info().Int("lines", v.lines).Msg("batch in progress")
	return r.process(ctx, dep, validatedAt, v.lines)
}

// fail ends the job in failed with errors.data.
func (r *batchRun) fail(errs []batchError, at time.Time) {
	r.s.batches.update(r.b, func(b *batch) {
		b.Status, b.FailedAt, b.Errors = statusFailed, at, errs
	})
	r.s.release(r.b)
	r.log.Info().Str("code", errs[0].Code).Msg("batch failed")
}

// finish registers the output and error files and sets the terminal state.
func (r *batchRun) finish(w *outputWriter, status string, at time.Time, apply func(b *batch)) error {
	var outID, errID string
	if w != nil {
		if err := w.close(); err != nil {
			w.abort()
			return fmt.Errorf("close output: %w", err)
		}
		var err error
		if outID, err = r.register(w, 0, "results.jsonl", at); err != nil {
			return err
		}
		if errID, err = r.register(w, 1, "errors.jsonl", at); err != nil {
			return err
		}
	}
	var visible time.Time
	if status == statusCompleted {
		visible = at.Add(r.s.faults.outputFileDelay(r.b.Deployment))
	}
	r.s.batches.update(r.b, func(b *batch) {
		b.Status, b.OutputFileID, b.ErrorFileID, b.OutputVisibleAt = status, outID, errID, visible
		apply(b)
	})
	r.s.release(r.b)
	r.log.Info().Str("status", status).Msg("batch finished")
	return nil
}

// register adds output file i of w to the file store.
func (r *batchRun) register(w *outputWriter, i int, name string, at time.Time) (string, error) {
	rec := &fileRecord{ID: newFileID(), Filename: name, Purpose: purposeBatchOutput, Bytes: w.bytes[i],
		Lines: w.lines[i], CreatedAt: at, ReadyAt: at, ExpiresAt: at.Add(r.b.OutputExpiry), path: w.files[i].Name()}
	if err := r.s.files.add(rec, at, false, 0, 0); err != nil {
		return "", fmt.Errorf("register output file: %w", err)
	}
	return rec.ID, nil
}

// cancel waits out the cancelling time and ends in cancelled, with the
// partial output of w (nil when the job never started).
func (r *batchRun) cancel(ctx context.Context, w *outputWriter, done int) error {
	var cancellingAt time.Time
	r.s.batches.update(r.b, func(b *batch) { cancellingAt = b.CancellingAt })
	at := cancellingAt.Add(r.s.cfg.Batch.CancellingTime.D())
	if err := r.s.clock.WaitUntil(ctx, at, nil); err != nil {
		if w != nil {
			w.abort()
		}
		return nil
	}
	r.log.Info().Int("done", done).Msg("batch cancelled")
	return r.finish(w, statusCancelled, at, func(b *batch) { b.CancelledAt = at })
}
