package aoaisim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/offpath/offpath/internal/lines"
)

// countEvery is how often (in lines) the worker publishes request_counts and
// looks for a cancel while it catches up on due lines.
const countEvery = 256

// lineProgress tracks lines run so far.
type lineProgress struct {
	done, completed, failed int
}

// dueAt is when line k (1-based) is due: start + k × perLine, saturating.
func dueAt(start time.Time, k int, perLine time.Duration) time.Time {
	d := float64(k) * float64(perLine)
	if d >= math.MaxInt64/2 {
		return start.Add(math.MaxInt64 / 2)
	}
	return start.Add(time.Duration(d))
}

// process runs the lines of a validated job at the deployment's rate, from
// start, until all are done (completed), the window closes (expired) or a
// cancel arrives (cancelled).
func (r *batchRun) process(ctx context.Context, dep *deploymentState, start time.Time, total int) error {
	s, b := r.s, r.b
	rate := s.cfg.Batch.LinesPerMinute
	if dep.cfg.BatchLinesPerMinute > 0 {
		rate = dep.cfg.BatchLinesPerMinute
	}
	perLine := max(time.Duration(float64(time.Minute)/rate), 1)
	expire := s.cfg.Batch.Expiry == ExpiryExpire
	w, err := newOutputWriter(s.files, s.cfg.Batch.ShuffleWindow, seedOf([]byte(b.ID)))
	if err != nil {
		return fmt.Errorf("open output: %w", err)
	}
	if _, err := r.input.Seek(0, io.SeekStart); err != nil {
		w.abort()
		return fmt.Errorf("rewind input: %w", err)
	}
	rd := bufio.NewReaderSize(r.input, 256<<10)
	var line []byte
	var p lineProgress
	for {
		// A cancel stops the job before any further line runs.
		if r.publish(p) == statusCancelling {
			return r.cancel(ctx, w, p.done)
		}
		now := s.clock.Now()
		limit := now
		if expire && limit.After(b.ExpiresAt) {
			limit = b.ExpiresAt
		}
		due := total
		if el := limit.Sub(start); el/perLine < time.Duration(total) {
			due = int(el / perLine)
		}
		for p.done < due {
			line, err = lines.Read(rd, line, maxLineBytes)
			if err != nil {
				w.abort()
				return fmt.Errorf("read input line %d: %w", p.done+1, err)
			}
			ok, err := r.runLine(w, dep, line)
			if err != nil {
				w.abort()
				return err
			}
			p.done++
			if ok {
				p.completed++
			} else {
				p.failed++
			}
			if p.done%countEvery == 0 && r.publish(p) == statusCancelling {
				break
			}
		}
		switch {
		case r.publish(p) == statusCancelling:
			return r.cancel(ctx, w, p.done)
		case p.done == total:
			return r.finalize(ctx, w, dueAt(start, total, perLine))
		case expire && !now.Before(b.ExpiresAt):
			return r.expire(w, rd, line, p)
		}
		next := dueAt(start, p.done+1, perLine)
		if expire && next.After(b.ExpiresAt) {
			next = b.ExpiresAt
		}
		if err := s.clock.WaitUntil(ctx, next, b.wake); err != nil {
			w.abort()
			return nil
		}
	}
}

// publish stores request_counts and returns the current status.
func (r *batchRun) publish(p lineProgress) string {
	var st string
	r.s.batches.update(r.b, func(b *batch) {
		b.Completed, b.Failed, st = p.completed, p.failed, b.Status
	})
	return st
}

// finalize moves the job to finalizing at at, then to completed after the
// finalizing time.
func (r *batchRun) finalize(ctx context.Context, w *outputWriter, at time.Time) error {
	cancelling := false
	r.s.batches.update(r.b, func(b *batch) {
		if b.Status != statusInProgress {
			cancelling = true
			return
		}
		b.Status, b.FinalizingAt = statusFinalizing, at
	})
	if cancelling {
		return r.cancel(ctx, w, r.b.Total)
	}
	completedAt := at.Add(r.s.cfg.Batch.FinalizingTime.D())
	if err := r.s.clock.WaitUntil(ctx, completedAt, nil); err != nil {
		w.abort()
		return nil
	}
	return r.finish(w, statusCompleted, completedAt, func(b *batch) { b.CompletedAt = completedAt })
}

// expire ends the job at expires_at with partial output. Lines not run go to
// the error file with code batch_expired unless configured otherwise.
func (r *batchRun) expire(w *outputWriter, rd *bufio.Reader, line []byte, p lineProgress) error {
	if !r.s.cfg.Batch.OmitExpiredLines {
		for {
			var err error
			line, err = lines.Read(rd, line, maxLineBytes)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				w.abort()
				return fmt.Errorf("read input for expiry: %w", err)
			}
			var in inputLine
			_ = json.Unmarshal(line, &in) // validated before
			out := outputLine{Error: &lineError{Code: "batch_expired", Message: "This request could not be executed before the completion window expired."}}
			if in.CustomID != nil {
				out.CustomID = *in.CustomID
			}
			if err := w.add(true, out); err != nil {
				w.abort()
				return err
			}
			p.failed++
		}
		r.publish(p)
	}
	at := r.b.ExpiresAt
	return r.finish(w, statusExpired, at, func(b *batch) { b.ExpiredAt = at })
}

// runLine runs one input line through the model and queues its result.
// It reports whether the line succeeded.
func (r *batchRun) runLine(w *outputWriter, dep *deploymentState, raw []byte) (bool, error) {
	var in struct {
		CustomID *string     `json:"custom_id"`
		Body     chatRequest `json:"body"`
	}
	var rin struct {
		CustomID *string          `json:"custom_id"`
		Body     responsesRequest `json:"body"`
	}
	responses := normaliseRoute(r.b.Endpoint) == "/responses"
	var decodeErr error
	if responses {
		decodeErr = json.Unmarshal(raw, &rin)
		in.CustomID = rin.CustomID
	} else {
		decodeErr = json.Unmarshal(raw, &in) // one pass: the line was validated before
	}
	out := outputLine{}
	if in.CustomID != nil {
		out.CustomID = *in.CustomID
	}
	if r.s.cfg.Batch.IncludeLineID {
		out.ID = newID("batch_req_", 32)
	}
	var call *chatCall
	var apiErr *apiError
	if decodeErr != nil {
		apiErr = invalidRequest("body", fmt.Sprintf("The request body could not be read: %v", decodeErr))
	} else if responses {
		call, apiErr = rin.Body.call()
	} else {
		call, apiErr = in.Body.call()
	}
	var resp *chatCompletion
	if apiErr == nil {
		resp, apiErr = r.s.complete(dep, call)
	}
	if apiErr != nil {
		if r.s.cfg.Batch.ErrorLine == ErrorLineError {
			out.Error = &lineError{Code: apiErr.Code, Message: apiErr.Message}
		} else {
			out.Response = &lineResponse{StatusCode: apiErr.status, RequestID: newUUID(), Body: errorEnvelope{Error: apiErr}}
		}
		return false, w.add(true, out)
	}
	out.Response = &lineResponse{StatusCode: 200, RequestID: newUUID(), Body: resp}
	if responses {
		out.Response.Body = asResponse(resp)
	}
	return true, w.add(false, out)
}
