package batchapi

import (
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
)

// Client talks to one Azure OpenAI resource's Files and Batches APIs.
// It is safe for concurrent use.
type Client struct {
	cfg Config
	oai openai.Client
	log zerolog.Logger
}

// New builds a Client. httpClient carries the transport (nil: a client with
// no overall timeout; per-call deadlines come from cfg and ctx). It must be
// an *http.Client: openai-go's Azure options refuse other doers.
func New(cfg Config, httpClient *http.Client, logger zerolog.Logger) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("batchapi config: %w", err)
	}
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	opts := append(endpointOptions(cfg), option.WithHTTPClient(httpClient), option.WithMaxRetries(0))
	return &Client{
		cfg: cfg,
		oai: openai.NewClient(opts...),
		log: logger.With().Str("component", "batchapi").Str("surface", string(cfg.Surface)).Logger(),
	}, nil
}

// endpointOptions is the one place where the endpoint and the credential
// become request options.
//
// Classic uses openai-go's azure package: WithEndpoint adds ?api-version=
// and the /openai prefix (files and batches take no deployment in the path),
// and WithAPIKey or WithTokenCredential authenticate.
//
// V1 cannot use the azure package: since openai-go 3.53 its auth options
// require WithEndpoint, which would produce /openai/v1/openai/... paths.
// So V1 is a plain base URL plus one middleware that sets exactly one
// credential header, overwriting anything the SDK took from OPENAI_*
// environment variables (NewClient reads them unless WithEndpoint is used).
//
// The SDK's own retries are off (WithMaxRetries(0)) for every call: they
// would re-send batch creates, and this package retries idempotent calls
// itself with a budget and logging.
func endpointOptions(cfg Config) []option.RequestOption {
	if cfg.Surface == Classic {
		opts := []option.RequestOption{azure.WithEndpoint(cfg.Endpoint, cfg.APIVersion)}
		if cfg.APIKey != "" {
			opts = append(opts, azure.WithAPIKey(cfg.APIKey))
		} else {
			opts = append(opts, azure.WithTokenCredential(cfg.Credential, azure.WithTokenCredentialScopes(cfg.TokenScopes)))
		}
		if cfg.AllowLoopbackHTTP {
			opts = append(opts, azure.WithUnsafeAllowHTTP())
		}
		return opts
	}
	return []option.RequestOption{
		option.WithBaseURL(cfg.Endpoint + "/openai/v1/"),
		option.WithMiddleware(v1Auth(cfg.APIKey, cfg.Credential, cfg.TokenScopes)),
	}
}

// v1Auth sets the api-key header, or a bearer token from cred (azidentity
// credentials cache their tokens), and removes every other credential and
// OpenAI-platform header.
func v1Auth(key string, cred azcore.TokenCredential, scopes []string) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		h := req.Header
		h.Del("OpenAI-Organization")
		h.Del("OpenAI-Project")
		if key != "" {
			h.Del("Authorization")
			h.Set("api-key", key)
			return next(req)
		}
		tok, err := cred.GetToken(req.Context(), policy.TokenRequestOptions{Scopes: scopes})
		if err != nil {
			return nil, fmt.Errorf("get entra token: %w", err)
		}
		h.Del("api-key")
		h.Set("Authorization", "Bearer "+tok.Token)
		return next(req)
	}
}
