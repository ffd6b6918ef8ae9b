package azopenai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/openai/openai-go/v3"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/ingest"
)

// Defaults of QueueConfig (the embeddings batch and the summary input are
// package ingest's defaults).
const (
	DefaultQueueAPIVersion  = "2024-10-21"
	DefaultAttemptTimeout   = 60 * time.Second
	DefaultQueueMaxAttempts = 6
	DefaultMinAttemptTime   = 2 * time.Second
	DefaultRetryBudget      = 2 * time.Minute
	DefaultKeywords         = 8
)

// QueueConfig configures a QueueClient. Zero fields take the defaults.
type QueueConfig struct {
	// Endpoint is the resource, "https://{resource}.openai.azure.com".
	Endpoint string `json:"endpoint"`
	// APIVersion is the data-plane api-version. Default 2024-10-21 (GA).
	APIVersion string `json:"api_version"`
	// APIKey authenticates with the api-key header. Set it or Credential.
	APIKey string `json:"-"`
	// Credential authenticates with Entra ID (managed identity).
	Credential azcore.TokenCredential `json:"-"`
	// AllowHTTP permits plain http to a loopback endpoint (the simulator).
	AllowHTTP bool `json:"allow_http"`
	// HTTPClient replaces the default HTTP client, whose transport keeps up
	// to 64 idle connections to the endpoint (net/http's default keeps two,
	// so concurrent invocations would open a new TLS connection for most
	// requests).
	HTTPClient *http.Client `json:"-"`

	// AttemptTimeout bounds one HTTP attempt. Default 60 s.
	AttemptTimeout time.Duration `json:"attempt_timeout"`
	// MaxAttempts bounds the failed attempts of one request (5xx, timeouts,
	// broken connections). 429s do not count: they name their wait, and
	// the time budget alone bounds those. Default 6.
	MaxAttempts int `json:"max_attempts"`
	// BaseBackoff and MaxBackoff shape the exponential backoff used when the
	// service names no wait: base × 2^(attempt-1), capped, with half of it
	// jittered. Default 500 ms and 8 s.
	BaseBackoff time.Duration `json:"base_backoff"`
	MaxBackoff  time.Duration `json:"max_backoff"`
	// MinAttemptTime is the least time an attempt needs: a wait that would
	// leave less before the deadline is not started. Default 2 s.
	MinAttemptTime time.Duration `json:"min_attempt_time"`
	// RetryBudget bounds the retries of a call whose context has no
	// deadline. Default 2 min.
	RetryBudget time.Duration `json:"retry_budget"`

	// EmbedBatch and EmbedBatchTokens bound the inputs of one embeddings
	// request, in count and in tokens. Default 64 and 8,000: small enough
	// to fit a per-instance TPM share, large enough to save round trips.
	EmbedBatch       int `json:"embed_batch"`
	EmbedBatchTokens int `json:"embed_batch_tokens"`
	// SummaryInputTokens bounds the text sent to Summarize; longer text is
	// cut (ingest.Summary.Truncated). Default 12,000.
	SummaryInputTokens int `json:"summary_input_tokens"`
	// Keywords is how many keywords Summarize asks for. Default 8.
	Keywords int `json:"keywords"`

	// Now, Sleep and Jitter replace the clock, the wait between attempts and
	// the jitter source (a float in [0, 1)), for tests.
	Now    func() time.Time                                 `json:"-"`
	Sleep  func(ctx context.Context, d time.Duration) error `json:"-"`
	Jitter func() float64                                   `json:"-"`
}

// Limiter paces requests per deployment; *ratelimit.Set is one.
type Limiter interface {
	Wait(ctx context.Context, deployment string, tokens int64) error
}

// QueueClient calls Azure OpenAI for the queue path. It is safe for concurrent
// use; build one per process.
type QueueClient struct {
	oa      openai.Client
	backoff backoff
	cfg     QueueConfig
	limiter Limiter
	log     zerolog.Logger
}

var _ ingest.Models = (*QueueClient)(nil)

// NewQueueClient returns a QueueClient. limiter may be nil (no pacing).
func NewQueueClient(cfg QueueConfig, limiter Limiter, logger zerolog.Logger) (*QueueClient, error) {
	cfg.APIVersion = cmp.Or(cfg.APIVersion, DefaultQueueAPIVersion)
	cfg.AttemptTimeout = cmp.Or(cfg.AttemptTimeout, DefaultAttemptTimeout)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, DefaultQueueMaxAttempts)
	cfg.BaseBackoff = cmp.Or(cfg.BaseBackoff, DefaultBaseBackoff)
	cfg.MaxBackoff = cmp.Or(cfg.MaxBackoff, DefaultMaxBackoff)
	cfg.MinAttemptTime = cmp.Or(cfg.MinAttemptTime, DefaultMinAttemptTime)
	cfg.RetryBudget = cmp.Or(cfg.RetryBudget, DefaultRetryBudget)
	cfg.EmbedBatch = cmp.Or(cfg.EmbedBatch, ingest.DefaultEmbedBatch)
	cfg.EmbedBatchTokens = cmp.Or(cfg.EmbedBatchTokens, ingest.DefaultEmbedBatchTokens)
	cfg.SummaryInputTokens = cmp.Or(cfg.SummaryInputTokens, ingest.DefaultSummaryInput)
	cfg.Keywords = cmp.Or(cfg.Keywords, DefaultKeywords)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}

	var errs []error
	if cfg.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: required"))
	}
	if (cfg.APIKey == "") == (cfg.Credential == nil) {
		errs = append(errs, errors.New("authentication: set exactly one of api key and credential"))
	}
	if cfg.MaxAttempts < 1 || cfg.EmbedBatch < 1 || cfg.EmbedBatchTokens < 1 || cfg.SummaryInputTokens < 1 || cfg.Keywords < 1 {
		errs = append(errs, errors.New("max attempts, embed batch, embed batch tokens, summary input tokens and keywords must be positive"))
	}
	if cfg.EmbedBatch > 2048 {
		errs = append(errs, fmt.Errorf("embed batch %d: Azure takes at most 2,048 inputs", cfg.EmbedBatch))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("azopenai queue config: %w", err)
	}

	return &QueueClient{
		oa: newOpenAI(conn{endpoint: cfg.Endpoint, surface: Classic, apiVersion: cfg.APIVersion,
			apiKey: cfg.APIKey, credential: cfg.Credential, scopes: []string{DefaultTokenScope},
			allowHTTP: cfg.AllowHTTP, httpClient: cfg.HTTPClient}),
		backoff: backoff{base: cfg.BaseBackoff, max: cfg.MaxBackoff, jitter: cfg.Jitter},
		cfg:     cfg,
		limiter: limiter,
		log:     logger.With().Str("component", "azopenai").Logger(),
	}, nil
}
