package azopenai

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/offpath/offpath/internal/batch"
)

// Surface is one of Azure OpenAI's two data-plane APIs.
type Surface string

const (
	// Classic is https://{res}.openai.azure.com/openai/...?api-version=...
	Classic Surface = "classic"
	// V1 is https://{res}.openai.azure.com/openai/v1/..., GA since August
	// 2025 and the only surface newer models accept for Global Batch.
	V1 Surface = "v1"
)

// Defaults.
const (
	DefaultBatchAPIVersion  = "2025-04-01-preview" // first classic version with output_expires_after
	DefaultTokenScope       = "https://cognitiveservices.azure.com/.default"
	DefaultRequestTimeout   = time.Minute
	DefaultUploadTimeout    = 30 * time.Minute
	DefaultBatchMaxAttempts = 4
	DefaultMaxRetryWait     = 30 * time.Second
	DefaultListPageSize     = 100
	DefaultLookupLimit      = 1000

	// Azure bounds both expiries to 14..30 days (OpenAI allows one hour).
	MinExpiry           = 14 * 24 * time.Hour
	MaxExpiry           = 30 * 24 * time.Hour
	DefaultFileExpiry   = MinExpiry                 // input files are deleted once the job ends
	DefaultOutputExpiry = batch.DefaultOutputExpiry // MaxExpiry: outputs are copied at once; the margin is for outages
)

// BatchConfig configures a BatchClient. Exactly one of APIKey and Credential is set.
type BatchConfig struct {
	// Endpoint is the resource URL without a path, e.g.
	// https://myres.openai.azure.com.
	Endpoint string `json:"endpoint"`
	// Surface selects the API. Default V1.
	Surface Surface `json:"surface"`
	// APIVersion is the classic api-version. Default DefaultBatchAPIVersion.
	APIVersion string `json:"api_version"`
	// APIKey is sent as "api-key" on both surfaces.
	APIKey string `json:"-"`
	// Credential is an Entra ID credential (managed identity in Azure).
	Credential azcore.TokenCredential `json:"-"`
	// TokenScopes are requested for Credential. Default DefaultTokenScope;
	// newer v1 samples use https://ai.azure.com/.default.
	TokenScopes []string `json:"token_scopes"`
	// AllowLoopbackHTTP permits plain http to a loopback endpoint (the
	// simulator); any other endpoint must be https.
	AllowLoopbackHTTP bool `json:"allow_loopback_http"`
	// FileExpiry is the expires_after of uploaded input files. Default 14 days.
	FileExpiry time.Duration `json:"file_expiry"`
	// OutputExpiry is the output_expires_after of batches. Default 30 days.
	OutputExpiry time.Duration `json:"output_expiry"`
	// RequestTimeout bounds one attempt of a call (for downloads, until the
	// response headers arrive). Default 1 minute.
	RequestTimeout time.Duration `json:"request_timeout"`
	// UploadTimeout bounds one upload. Default 30 minutes.
	UploadTimeout time.Duration `json:"upload_timeout"`
	// MaxAttempts bounds the attempts of a call that may be repeated
	// (including create after a lookup proved it did not happen). Default 4.
	MaxAttempts int `json:"max_attempts"`
	// MaxRetryWait is the longest server-directed wait (Retry-After,
	// retry-after-ms) honoured in-process; a longer one is returned to the
	// caller as the error's retry hint. Default 30 s.
	MaxRetryWait time.Duration `json:"max_retry_wait"`
	// ListPageSize is the limit of list calls (Azure allows 1..100).
	// Default 100.
	ListPageSize int `json:"list_page_size"`
	// LookupLimit is how many of the newest batches are examined to resolve
	// an ambiguous create. Default 1000.
	LookupLimit int `json:"lookup_limit"`
}

func (c BatchConfig) withDefaults() BatchConfig {
	c.Endpoint = strings.TrimRight(c.Endpoint, "/")
	c.Surface = cmp.Or(c.Surface, V1)
	c.APIVersion = cmp.Or(c.APIVersion, DefaultBatchAPIVersion)
	if len(c.TokenScopes) == 0 {
		c.TokenScopes = []string{DefaultTokenScope}
	}
	c.FileExpiry = cmp.Or(c.FileExpiry, DefaultFileExpiry)
	c.OutputExpiry = cmp.Or(c.OutputExpiry, DefaultOutputExpiry)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, DefaultRequestTimeout)
	c.UploadTimeout = cmp.Or(c.UploadTimeout, DefaultUploadTimeout)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultBatchMaxAttempts)
	c.MaxRetryWait = cmp.Or(c.MaxRetryWait, DefaultMaxRetryWait)
	c.ListPageSize = cmp.Or(c.ListPageSize, DefaultListPageSize)
	c.LookupLimit = cmp.Or(c.LookupLimit, DefaultLookupLimit)
	return c
}

// Validate reports every problem of the configuration, defaults applied.
func (c BatchConfig) Validate() error {
	c = c.withDefaults()
	var errs []error
	u, err := url.Parse(c.Endpoint)
	switch {
	case err != nil || u.Host == "":
		errs = append(errs, fmt.Errorf("endpoint: %q is not an absolute URL", c.Endpoint))
	case u.Path != "" || u.RawQuery != "":
		errs = append(errs, fmt.Errorf("endpoint: %q must have no path or query (the surface adds /openai)", c.Endpoint))
	case u.Scheme == "https":
	case u.Scheme == "http" && c.AllowLoopbackHTTP && isLoopback(u.Hostname()):
	default:
		errs = append(errs, fmt.Errorf("endpoint: %q must be https (plain http only to loopback with allow_loopback_http)", c.Endpoint))
	}
	if c.Surface != Classic && c.Surface != V1 {
		errs = append(errs, fmt.Errorf("surface: %q is not %q or %q", c.Surface, Classic, V1))
	}
	if (c.APIKey == "") == (c.Credential == nil) {
		errs = append(errs, errors.New("auth: set exactly one of api key and credential"))
	}
	for name, d := range map[string]time.Duration{"file_expiry": c.FileExpiry, "output_expiry": c.OutputExpiry} {
		if d < MinExpiry || d > MaxExpiry || d%time.Second != 0 {
			errs = append(errs, fmt.Errorf("%s: %v outside Azure's 14..30 days in whole seconds", name, d))
		}
	}
	if c.RequestTimeout < 0 || c.UploadTimeout < 0 || c.MaxAttempts < 1 || c.MaxRetryWait < 0 || c.LookupLimit < 1 {
		errs = append(errs, errors.New("timeouts, attempts, retry wait and lookup limit must be positive"))
	}
	if c.ListPageSize < 1 || c.ListPageSize > 100 {
		errs = append(errs, fmt.Errorf("list_page_size: %d outside 1..100", c.ListPageSize))
	}
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
