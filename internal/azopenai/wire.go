package azopenai

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

// conn is how to reach one resource, for both kinds of call.
type conn struct {
	endpoint   string
	surface    Surface
	apiVersion string
	apiKey     string
	credential azcore.TokenCredential
	scopes     []string
	allowHTTP  bool // plain http to a loopback endpoint (the simulator)
	httpClient *http.Client
}

// newOpenAI is the one place where the endpoint, the credential and the
// transport become an SDK client.
//
// Classic uses openai-go's azure package: WithEndpoint adds ?api-version=
// and the /openai prefix (with /deployments/{model} for the calls that
// take a deployment; files and batches take none), and WithAPIKey or
// WithTokenCredential authenticate.
//
// V1 cannot use the azure package: since openai-go 3.53 its auth options
// require WithEndpoint, which would produce /openai/v1/openai/... paths.
// So V1 is a plain base URL plus one middleware that sets exactly one
// credential header, overwriting anything the SDK took from OPENAI_*
// environment variables (NewClient reads them unless WithEndpoint is used).
//
// The SDK's own retries are off (WithMaxRetries(0)) for every call: they
// would re-send batch creates and spend a queue call's budget unseen; this
// package retries itself, counted and logged.
func newOpenAI(c conn) openai.Client {
	var opts []option.RequestOption
	if c.surface == Classic {
		opts = append(opts, azure.WithEndpoint(c.endpoint, c.apiVersion))
		if c.apiKey != "" {
			opts = append(opts, azure.WithAPIKey(c.apiKey))
		} else {
			opts = append(opts, azure.WithTokenCredential(c.credential, azure.WithTokenCredentialScopes(c.scopes)))
		}
		if c.allowHTTP {
			opts = append(opts, azure.WithUnsafeAllowHTTP())
		}
	} else {
		opts = append(opts,
			option.WithBaseURL(c.endpoint+"/openai/v1/"),
			option.WithMiddleware(v1Auth(c.apiKey, c.credential, c.scopes)))
	}
	if c.httpClient == nil {
		c.httpClient = defaultHTTPClient()
	}
	opts = append(opts, option.WithHTTPClient(c.httpClient), option.WithMaxRetries(0))
	return openai.NewClient(opts...)
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

// defaultHTTPClient is net/http's default transport with more idle
// connections per host (net/http's default keeps two, so concurrent calls
// would open a new TLS connection for most requests). Attempts are bounded
// by contexts, not by a client timeout.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 128
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}

// Defaults of the backoff used when the service names no wait.
const (
	DefaultBaseBackoff = 500 * time.Millisecond
	DefaultMaxBackoff  = 8 * time.Second
)

// backoff is the wait between attempts, for both kinds of call.
type backoff struct {
	base, max time.Duration
	jitter    func() float64 // in [0, 1)
}

// wait is the wait before attempt+1: the service's hint plus a millisecond
// (retry-after-ms is a whole number; a truncated one would send the retry a
// fraction too early) plus up to 10% jitter, so never less than it asked;
// or, without a hint, base × 2^(attempt-1) capped at max, half of it
// jittered, so that instances throttled together do not return together.
func (b backoff) wait(attempt int, hint time.Duration) time.Duration {
	if hint > 0 {
		return hint + time.Millisecond + time.Duration(b.jitter()*0.1*float64(hint))
	}
	d := b.base << min(attempt-1, 30)
	if d <= 0 || d > b.max {
		d = b.max
	}
	return d/2 + time.Duration(b.jitter()*float64(d/2))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
