package azopenai

import (
	"fmt"
	"math/rand/v2"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/rs/zerolog"
)

// BatchClient talks to one Azure OpenAI resource's Files and Batches APIs.
// It is safe for concurrent use.
type BatchClient struct {
	cfg     BatchConfig
	oai     openai.Client
	backoff backoff
	log     zerolog.Logger
}

// NewBatchClient builds a BatchClient. httpClient carries the transport
// (nil: the default, with no overall timeout; per-call deadlines come from
// cfg and ctx). It must be
// an *http.Client: openai-go's Azure options refuse other doers.
func NewBatchClient(cfg BatchConfig, httpClient *http.Client, logger zerolog.Logger) (*BatchClient, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("azopenai batch config: %w", err)
	}
	return &BatchClient{
		cfg: cfg,
		oai: newOpenAI(conn{endpoint: cfg.Endpoint, surface: cfg.Surface, apiVersion: cfg.APIVersion,
			apiKey: cfg.APIKey, credential: cfg.Credential, scopes: cfg.TokenScopes,
			allowHTTP: cfg.AllowLoopbackHTTP, httpClient: httpClient}),
		backoff: backoff{base: DefaultBaseBackoff, max: DefaultMaxBackoff, jitter: rand.Float64},
		log:     logger.With().Str("component", "azopenai").Str("surface", string(cfg.Surface)).Logger(),
	}, nil
}
