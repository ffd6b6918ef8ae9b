package ingest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/ledger"
)

// This file holds the model calls of the queue path as the processor sees
// them: what Models takes and returns. The Azure OpenAI adapter (package
// azopenai) implements Models and reads the service's wire format into
// these values, so that the processor needs neither the adapter nor an
// SDK.

// Defaults of the model calls, shared with the adapter's configuration.
const (
	// DefaultSummaryInput is how many tokens of the text a summary reads,
	// from the start.
	DefaultSummaryInput = 12000
	// DefaultEmbedBatch and DefaultEmbedBatchTokens bound one embeddings
	// request, in inputs and in tokens: small enough to fit a per-instance
	// TPM share, large enough to save round trips.
	DefaultEmbedBatch       = 64
	DefaultEmbedBatchTokens = 8000
)

// Models embeds and summarises; *azopenai.QueueClient is one.
type Models interface {
	Embed(ctx context.Context, deployment string, texts []string) (Embeddings, error)
	Summarize(ctx context.Context, deployment, text string, maxTokens int) (Summary, error)
}

// Trace counts what one call took.
type Trace struct {
	// Requests are the requests the model answered, a refusal included (one
	// per embeddings batch, one per summary).
	Requests int
	// Attempts are all HTTP attempts, Requests included.
	Attempts int
	// Throttled counts the 429s among the attempts.
	Throttled int
	// Waited is the time spent between attempts (not in the rate limiter).
	Waited time.Duration
}

// Add adds v to t.
func (t *Trace) Add(v Trace) {
	t.Requests += v.Requests
	t.Attempts += v.Attempts
	t.Throttled += v.Throttled
	t.Waited += v.Waited
}

// Embeddings are the vectors of a call to Embed, in the order of the texts.
type Embeddings struct {
	Vectors [][]float32
	// Model is the model the service named ("text-embedding-3-small").
	Model string
	// Usage is the tokens the service reported, summed over the call's
	// requests (Trace counts the requests).
	Usage ledger.Usage
	Trace Trace
}

// Summary is a chat deployment's summary of a text.
type Summary struct {
	// Text is the summary.
	Text string
	// Keywords describe the text, at most as many as the adapter asks for:
	// the model's, or, when it answered no JSON, the most frequent words
	// of the text.
	Keywords []string
	// Structured is true when the model answered the JSON object it was
	// asked for; false when the answer was taken as plain text.
	Structured bool
	// FinishReason is the model's ("stop", "length").
	FinishReason string
	// Truncated is true when the text was cut to the summary's input
	// tokens (DefaultSummaryInput unless configured otherwise).
	Truncated bool
	// Model is the model the service named.
	Model string
	// Usage is the tokens the service reported (Trace counts the
	// requests).
	Usage ledger.Usage
	Trace Trace
}

// Stages of a refusal.
const (
	StagePrompt     = "prompt"     // HTTP 400 content_filter: the input was blocked
	StageCompletion = "completion" // HTTP 200, finish_reason content_filter
)

// Refusal is a content-filter refusal. It is wrapped in an outcome.Refused
// error; find it with errors.As.
type Refusal struct {
	// Stage is StagePrompt or StageCompletion.
	Stage string
	// Categories are the filter categories that were filtered, sorted
	// ("hate", "jailbreak", "self_harm", "sexual", "violence", ...), when
	// the service named them.
	Categories []string
	// Usage is what the service charged for the whole call up to and
	// including the refused request: a refused completion reports its
	// usage; a blocked prompt reports none.
	Usage ledger.Usage
}

func (r *Refusal) Error() string {
	msg := "content filter refused the " + r.Stage
	if len(r.Categories) > 0 {
		msg += fmt.Sprintf(" (%s)", strings.Join(r.Categories, ", "))
	}
	return msg
}
