package azopenai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/outcome"
)

// Submission is one Azure job offpath wants to exist: one part of one
// offpath job, at one attempt. The triple (JobID, Part, Attempt) is written
// to the batch's metadata and is what makes CreateBatch idempotent.
type Submission struct {
	InputFileID string
	JobID       string
	Part        int
	// Attempt numbers resubmissions of the same part (after the quota
	// refused it, or validation failed it with token_limit_exceeded), so
	// that a lookup never mistakes the old, failed batch for the new one.
	Attempt int
	// Endpoint is the batch route. Default "/chat/completions".
	Endpoint string
	// Metadata is added to the batch (at most 13 pairs: Azure allows 16
	// and offpath uses 3); keys starting with "offpath_" are refused.
	Metadata map[string]string
	// MaybeCreated says an earlier call for this submission may have created
	// the batch (it returned ErrAmbiguous, the process stopped during it, or
	// the caller's record of it may be lost or stale): CreateBatch then
	// looks for it before creating.
	MaybeCreated bool
	// Since bounds that lookup: batches created before it (less a minute
	// for clock skew) cannot be this submission's, and the newest-first
	// listing stops there. Zero examines LookupLimit batches.
	Since time.Time
}

// Created is the outcome of CreateBatch.
type Created struct {
	Batch Batch
	// EnqueuedTokens is Azure's estimate for the file
	// (deployment-enqueued-tokens), MaxEnqueuedTokens the deployment's limit
	// (deployment-maximum-enqueued-tokens); -1 when absent (v1 may not send
	// them) or when the batch was recovered by lookup.
	EnqueuedTokens    int64
	MaxEnqueuedTokens int64
	// Recovered is true when the batch was found by its submission key
	// rather than created by this call. The batch found is the
	// submission's whatever input file it names: Batch.InputFileID may
	// differ from the Submission's when an earlier upload's reply was lost
	// and the file uploaded again; the caller keeps the batch's file and
	// deletes its own.
	Recovered bool
}

func (s Submission) metadata() (map[string]string, error) {
	if s.JobID == "" || s.InputFileID == "" || s.Part < 0 || s.Attempt < 0 {
		return nil, errors.New("submission needs an input file, a job id and non-negative part and attempt")
	}
	md := maps.Clone(s.Metadata)
	if md == nil {
		md = make(map[string]string, 3)
	}
	for k := range md {
		if strings.HasPrefix(k, "offpath_") {
			return nil, fmt.Errorf("metadata key %q is reserved", k)
		}
	}
	md[MetaJob], md[MetaPart], md[MetaAttempt] = s.JobID, strconv.Itoa(s.Part), strconv.Itoa(s.Attempt)
	return md, nil
}

// CreateBatch creates the batch of s, exactly once.
//
// The create call is never retried blindly: the SDK's retries are off, and
// when an attempt ends without a definite answer (connection reset, timeout,
// 5xx) the batches are listed and the one carrying s's submission key is
// returned if it exists; only if it does not is create tried again, within
// MaxAttempts. A 429 is a definite "no" and is retried after its
// Retry-After. HTTP 400 token_limit_exceeded returns ErrQuotaFull at once.
// If the outcome is still unknown when the budget or ctx runs out, the
// error wraps ErrAmbiguous: call again with MaybeCreated set.
func (c *BatchClient) CreateBatch(ctx context.Context, s Submission) (Created, error) {
	md, err := s.metadata()
	if err != nil {
		return Created{}, fmt.Errorf("create batch: %w", outcome.Reject("invalid submission", err))
	}
	log := c.log.With().Str("offpath_job", s.JobID).Int("part", s.Part).Int("attempt", s.Attempt).Logger()
	if s.MaybeCreated {
		b, ok, err := c.findBatch(ctx, s.JobID, s.Part, s.Attempt, s.Since)
		if err != nil {
			return Created{}, fmt.Errorf("create batch: look up earlier attempt: %w: %w", ErrAmbiguous, err)
		}
		if ok {
			return c.recovered(b, s)
		}
	}
	for n := 1; ; n++ {
		created, ambiguous, err := c.createOnce(ctx, s, md)
		if err == nil {
			log.Info().Str("batch_id", created.Batch.ID).Int64("enqueued_tokens", created.EnqueuedTokens).Msg("batch created")
			return created, nil
		}
		if ctx.Err() != nil {
			if ambiguous {
				err = fmt.Errorf("%w: %w", ErrAmbiguous, err)
			}
			return Created{}, fmt.Errorf("create batch: %w", err)
		}
		if ambiguous {
			log.Warn().Err(err).Int("try", n).Msg("batch create outcome unknown; looking it up")
			b, ok, ferr := c.findBatch(ctx, s.JobID, s.Part, s.Attempt, s.Since)
			if ferr != nil {
				return Created{}, fmt.Errorf("create batch: %w: %w (lookup: %w)", ErrAmbiguous, err, ferr)
			}
			if ok {
				return c.recovered(b, s)
			}
		}
		wait, again := c.shouldRetry(err, n)
		if !again {
			if ambiguous {
				// Not found now, but a request in flight may still land.
				err = fmt.Errorf("%w: %w", ErrAmbiguous, err)
			}
			return Created{}, fmt.Errorf("create batch: %w", err)
		}
		if err := sleep(ctx, wait); err != nil {
			return Created{}, fmt.Errorf("create batch: %w", err)
		}
	}
}

// createOnce sends one create. ambiguous is true when Azure may have acted
// on it without our knowing.
func (c *BatchClient) createOnce(ctx context.Context, s Submission, md map[string]string) (created Created, ambiguous bool, err error) {
	endpoint := s.Endpoint
	if endpoint == "" {
		endpoint = "/chat/completions"
	}
	actx, _, cancel := attemptContext(ctx, c.cfg.RequestTimeout)
	defer cancel()
	var raw *http.Response
	ob, err := c.oai.Batches.New(actx, openai.BatchNewParams{
		InputFileID:        s.InputFileID,
		Endpoint:           openai.BatchNewParamsEndpoint(endpoint),
		CompletionWindow:   openai.BatchNewParamsCompletionWindow24h,
		Metadata:           md,
		OutputExpiresAfter: openai.BatchNewParamsOutputExpiresAfter{Seconds: int64(c.cfg.OutputExpiry.Seconds())},
	}, option.WithResponseInto(&raw), option.WithMaxRetries(0))
	if err != nil {
		if cause := context.Cause(actx); errors.Is(cause, context.DeadlineExceeded) && ctx.Err() == nil {
			err = cause
		}
		var apiErr *openai.Error
		ambiguous = !errors.As(err, &apiErr) || apiErr.StatusCode == http.StatusRequestTimeout || apiErr.StatusCode >= 500
		return Created{}, ambiguous, classify(err)
	}
	return Created{
		Batch:             fromSDKBatch(ob),
		EnqueuedTokens:    headerInt(raw, "deployment-enqueued-tokens"),
		MaxEnqueuedTokens: headerInt(raw, "deployment-maximum-enqueued-tokens"),
	}, false, nil
}

func (c *BatchClient) recovered(b Batch, s Submission) (Created, error) {
	ev := c.log.Info()
	if b.InputFileID != s.InputFileID {
		ev = c.log.Warn().Str("input_file_id", b.InputFileID).Str("submitted_file_id", s.InputFileID)
	}
	ev.Str("batch_id", b.ID).Str("offpath_job", s.JobID).Int("part", s.Part).Int("attempt", s.Attempt).Msg("batch found by submission key")
	return Created{Batch: b, EnqueuedTokens: -1, MaxEnqueuedTokens: -1, Recovered: true}, nil
}

// FindBatch looks for the batch carrying a submission key among the
// LookupLimit newest batches (the list is newest first).
func (c *BatchClient) FindBatch(ctx context.Context, jobID string, part, attempt int) (Batch, bool, error) {
	return c.findBatch(ctx, jobID, part, attempt, time.Time{})
}

// ClockSkew is how much earlier than our clock says a batch may be
// stamped by Azure's and still be looked for.
const ClockSkew = time.Minute

func (c *BatchClient) findBatch(ctx context.Context, jobID string, part, attempt int, since time.Time) (Batch, bool, error) {
	seen := 0
	for b, err := range c.ListBatches(ctx) {
		if err != nil {
			return Batch{}, false, fmt.Errorf("find batch: %w", err)
		}
		if j, p, a, ok := b.Submission(); ok && j == jobID && p == part && a == attempt {
			return b, true, nil
		}
		if !since.IsZero() && !b.CreatedAt.IsZero() && b.CreatedAt.Before(since.Add(-ClockSkew)) {
			break
		}
		if seen++; seen >= c.cfg.LookupLimit {
			break
		}
	}
	return Batch{}, false, nil
}

// GetBatch returns a batch's current state.
func (c *BatchClient) GetBatch(ctx context.Context, id string) (Batch, error) {
	var b Batch
	err := c.retry(ctx, "get batch "+id, func(ctx context.Context) error {
		ob, err := c.oai.Batches.Get(ctx, id)
		if err == nil {
			b = fromSDKBatch(ob)
		}
		return err
	})
	return b, err
}

// CancelBatch asks Azure to cancel a batch (it stays cancelling for up to
// 10 minutes, then is cancelled with partial output). Cancelling twice is
// harmless; cancelling a finalizing or finished batch is ErrConflict.
func (c *BatchClient) CancelBatch(ctx context.Context, id string) (Batch, error) {
	var b Batch
	err := c.retry(ctx, "cancel batch "+id, func(ctx context.Context) error {
		ob, err := c.oai.Batches.Cancel(ctx, id)
		if err == nil {
			b = fromSDKBatch(ob)
		}
		return err
	})
	return b, err
}

// ListBatches yields every batch of the resource, newest first, page by
// page, each page retried as an idempotent call. The second-door audit and
// FindBatch use it; stop early by breaking out of the loop.
func (c *BatchClient) ListBatches(ctx context.Context) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		for page, err := range c.listPages(ctx) {
			if err != nil {
				yield(Batch{}, err)
				return
			}
			for _, b := range page {
				if !yield(b, nil) {
					return
				}
			}
		}
	}
}

// listPages yields the resource's batches a page (ListPageSize) at a
// time, newest first, each page retried as an idempotent call.
func (c *BatchClient) listPages(ctx context.Context) iter.Seq2[[]Batch, error] {
	return func(yield func([]Batch, error) bool) {
		after := ""
		for {
			params := openai.BatchListParams{Limit: openai.Int(int64(c.cfg.ListPageSize))}
			if after != "" {
				params.After = openai.String(after)
			}
			var page []openai.Batch
			var more bool
			err := c.retry(ctx, "list batches", func(ctx context.Context) error {
				p, err := c.oai.Batches.List(ctx, params)
				if err == nil {
					page, more = p.Data, p.HasMore
				}
				return err
			})
			if err != nil {
				yield(nil, err)
				return
			}
			out := make([]Batch, len(page))
			for i := range page {
				out[i] = fromSDKBatch(&page[i])
			}
			if !yield(out, nil) || !more || len(page) == 0 {
				return
			}
			after = page[len(page)-1].ID
		}
	}
}

// ListBatchStates reads the state of many batches from the resource's
// batch list, a page at a time, newest first, instead of one GET each. It
// stops when every batch of ids has been seen; when a page reaches
// batches created before since (the oldest of ids was created after it,
// less the clocks' skew); or when it has read as many pages as there are
// ids, so that it never costs more than twice the GETs it replaces (the
// list may be full of other batches). It returns the batches of ids it
// saw; the caller GETs the others. With an error it returns what it saw
// before.
func (c *BatchClient) ListBatchStates(ctx context.Context, ids []string, since time.Time) (map[string]Batch, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	seen := make(map[string]Batch, len(want))
	if len(want) == 0 {
		return seen, nil
	}
	pages := 0
	for page, err := range c.listPages(ctx) {
		if err != nil {
			return seen, fmt.Errorf("list batch states: %w", err)
		}
		pages++
		older := false
		for _, b := range page {
			if want[b.ID] {
				seen[b.ID] = b
			}
			older = older || !since.IsZero() && !b.CreatedAt.IsZero() && b.CreatedAt.Before(since.Add(-ClockSkew))
		}
		if len(seen) == len(want) || older || pages >= len(want) {
			break
		}
	}
	return seen, nil
}
