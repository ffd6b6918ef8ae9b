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

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/outcome"
)

// metadata is the batch metadata of s: its own pairs and the submission key.
func metadata(s batch.Submission) (map[string]string, error) {
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
	md[batch.MetaJob], md[batch.MetaPart], md[batch.MetaAttempt] = s.JobID, strconv.Itoa(s.Part), strconv.Itoa(s.Attempt)
	return md, nil
}

// CreateBatch creates the batch of s, exactly once.
//
// The create call is never retried blindly: the SDK's retries are off, and
// when an attempt ends without a definite answer (connection reset, timeout,
// 5xx) the batches are listed and the one carrying s's submission key is
// returned if it exists; only if it does not is create tried again, within
// MaxAttempts. A 429 is a definite "no" and is retried after its
// Retry-After. HTTP 400 token_limit_exceeded returns batch.ErrQuotaFull at once.
// If the outcome is still unknown when the budget or ctx runs out, the
// error wraps batch.ErrAmbiguous: call again with MaybeCreated set.
func (c *BatchClient) CreateBatch(ctx context.Context, s batch.Submission) (batch.Created, error) {
	md, err := metadata(s)
	if err != nil {
		return batch.Created{}, fmt.Errorf("create batch: %w", outcome.Reject("invalid submission", err))
	}
	log := c.log.With().Str("offpath_job", s.JobID).Int("part", s.Part).Int("attempt", s.Attempt).Logger()
	if s.MaybeCreated {
		b, ok, err := c.findBatch(ctx, s.JobID, s.Part, s.Attempt, s.Since)
		if err != nil {
			return batch.Created{}, fmt.Errorf("create batch: look up earlier attempt: %w: %w", batch.ErrAmbiguous, err)
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
				err = fmt.Errorf("%w: %w", batch.ErrAmbiguous, err)
			}
			return batch.Created{}, fmt.Errorf("create batch: %w", err)
		}
		if ambiguous {
			log.Warn().Err(err).Int("try", n).Msg("batch create outcome unknown; looking it up")
			b, ok, ferr := c.findBatch(ctx, s.JobID, s.Part, s.Attempt, s.Since)
			if ferr != nil {
				return batch.Created{}, fmt.Errorf("create batch: %w: %w (lookup: %w)", batch.ErrAmbiguous, err, ferr)
			}
			if ok {
				return c.recovered(b, s)
			}
		}
		wait, again := c.shouldRetry(err, n)
		if !again {
			if ambiguous {
				// Not found now, but a request in flight may still land.
				err = fmt.Errorf("%w: %w", batch.ErrAmbiguous, err)
			}
			return batch.Created{}, fmt.Errorf("create batch: %w", err)
		}
		if err := sleep(ctx, wait); err != nil {
			return batch.Created{}, fmt.Errorf("create batch: %w", err)
		}
	}
}

// createOnce sends one create. ambiguous is true when Azure may have acted
// on it without our knowing.
func (c *BatchClient) createOnce(ctx context.Context, s batch.Submission, md map[string]string) (created batch.Created, ambiguous bool, err error) {
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
		return batch.Created{}, ambiguous, classify(err)
	}
	return batch.Created{
		Batch:             fromSDKBatch(ob),
		EnqueuedTokens:    headerInt(raw, "deployment-enqueued-tokens"),
		MaxEnqueuedTokens: headerInt(raw, "deployment-maximum-enqueued-tokens"),
	}, false, nil
}

func (c *BatchClient) recovered(b batch.AzureBatch, s batch.Submission) (batch.Created, error) {
	ev := c.log.Info()
	if b.InputFileID != s.InputFileID {
		ev = c.log.Warn().Str("input_file_id", b.InputFileID).Str("submitted_file_id", s.InputFileID)
	}
	ev.Str("batch_id", b.ID).Str("offpath_job", s.JobID).Int("part", s.Part).Int("attempt", s.Attempt).Msg("batch found by submission key")
	return batch.Created{Batch: b, EnqueuedTokens: -1, MaxEnqueuedTokens: -1, Recovered: true}, nil
}

// FindBatch looks for the batch carrying a submission key among the
// LookupLimit newest batches (the list is newest first).
func (c *BatchClient) FindBatch(ctx context.Context, jobID string, part, attempt int) (batch.AzureBatch, bool, error) {
	return c.findBatch(ctx, jobID, part, attempt, time.Time{})
}

// ClockSkew is how much earlier than our clock says a batch may be
// stamped by Azure's and still be looked for.
const ClockSkew = time.Minute

func (c *BatchClient) findBatch(ctx context.Context, jobID string, part, attempt int, since time.Time) (batch.AzureBatch, bool, error) {
	seen := 0
	for b, err := range c.ListBatches(ctx) {
		if err != nil {
			return batch.AzureBatch{}, false, fmt.Errorf("find batch: %w", err)
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
	return batch.AzureBatch{}, false, nil
}

// GetBatch returns a batch's current state.
func (c *BatchClient) GetBatch(ctx context.Context, id string) (batch.AzureBatch, error) {
	var b batch.AzureBatch
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
// harmless; cancelling a finalizing or finished batch is batch.ErrAzureConflict.
func (c *BatchClient) CancelBatch(ctx context.Context, id string) (batch.AzureBatch, error) {
	var b batch.AzureBatch
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
func (c *BatchClient) ListBatches(ctx context.Context) iter.Seq2[batch.AzureBatch, error] {
	return func(yield func(batch.AzureBatch, error) bool) {
		for page, err := range c.listPages(ctx) {
			if err != nil {
				yield(batch.AzureBatch{}, err)
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
func (c *BatchClient) listPages(ctx context.Context) iter.Seq2[[]batch.AzureBatch, error] {
	return func(yield func([]batch.AzureBatch, error) bool) {
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
			out := make([]batch.AzureBatch, len(page))
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
func (c *BatchClient) ListBatchStates(ctx context.Context, ids []string, since time.Time) (map[string]batch.AzureBatch, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	seen := make(map[string]batch.AzureBatch, len(want))
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
