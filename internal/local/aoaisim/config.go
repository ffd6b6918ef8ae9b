package aoaisim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Deployment types.
const (
	// TypeStandard is a synchronous deployment (chat completions or embeddings).
	TypeStandard = "standard"
	// TypeGlobalBatch is a Global Batch deployment: only batch jobs may use it.
	TypeGlobalBatch = "global-batch"
)

// Enqueued-token quota behaviours of a global-batch deployment.
const (
	// QuotaFailFast rejects the create call with HTTP 400 token_limit_exceeded, as
	// Azure does in its "fail fast" regions (eastus, swedencentral, ...). Default.
	QuotaFailFast = "fail_fast"
	// QuotaFailAtValidation accepts the create call and fails the job during
	// validation with errors.data[0].code = token_limit_exceeded (older behaviour).
	QuotaFailAtValidation = "fail_at_validation"
)

// Config configures a Server. The zero value plus one deployment is usable: every
// field has a documented default applied by New. The JSON form is the -config
// file of cmd/aoaisim (see the package documentation).
type Config struct {
	// Keys are the accepted API keys, sent as "api-key: <key>" or
	// "Authorization: Bearer <key>". Default: [DefaultKey].
	Keys []string `json:"keys"`
	// AcceptAnyBearer accepts any "Authorization: Bearer" token, standing in for
	// Entra ID tokens. Default false.
	AcceptAnyBearer bool `json:"accept_any_bearer"`
	// IdentityHeader is the secret the managed identity endpoint
	// (IdentityPath) expects in X-IDENTITY-HEADER, App Service's
	// IDENTITY_HEADER. Default DefaultIdentityHeader.
	IdentityHeader string `json:"identity_header"`
	// Deployments lists the model deployments. At least one is required.
	Deployments []Deployment `json:"deployments"`
	// DisableRateLimits turns TPM/RPM limits off for every deployment.
	DisableRateLimits bool `json:"disable_rate_limits"`
	// DefaultMaxTokens is the completion allowance charged against TPM when a
	// request sets neither max_tokens nor max_completion_tokens. Azure documents
	// that max_tokens enters the estimate but not the default; 4096 here.
	DefaultMaxTokens int `json:"default_max_tokens"`
	// ContentFilter sets the trigger phrases of the simulated content filter.
	ContentFilter ContentFilter `json:"content_filter"`
	// Batch sets batch timings, limits and behaviour switches.
	Batch BatchConfig `json:"batch"`
	// Files sets the Files API limits.
	Files FilesConfig `json:"files"`
	// Metrics shapes the Azure Monitor metrics API the simulator serves.
	Metrics MetricsConfig `json:"metrics"`
	// Faults are the fault-injection rules active from the start.
	Faults []FaultRule `json:"faults"`
	// Quirks reproduce odd shapes seen in Azure's documentation samples.
	Quirks Quirks `json:"quirks"`
	// DataDir holds uploaded and generated files. Default: a temporary directory
	// removed by Close.
	DataDir string `json:"data_dir"`
	// Seed seeds the fault-injection random source and output shuffling.
	// Default 1.
	Seed uint64 `json:"seed"`
	// Speed is the factor of the simulated clock built when Clock is nil:
	// simulated time = start + Speed × elapsed real time. 0 freezes the clock
	// (advance it through the admin endpoint). Default 1.
	Speed *float64 `json:"speed,omitempty"`
	// Clock drives batch progression, timestamps and file expiry. Default: a
	// clock at the current time running at Speed.
	Clock *Clock `json:"-"`
	// RateClock drives the rate-limit windows. It is separate from Clock because
	// clients honour retry-after in real time. Default: real time.
	RateClock *Clock `json:"-"`
	// RealRetryAfter gives a 429's retry-after and retry-after-ms in real
	// time: the RateClock's wait divided by its speed. A RateClock running
	// speed times faster than real time then makes a minute's window pass
	// in a fraction of one for a client that waits in real time (the
	// handler's own process), and tells it the truth about when to come
	// back. Otherwise they are in the RateClock's time, for a client that
	// waits on a clock of its own moved in step.
	RealRetryAfter bool `json:"-"`
}

// Deployment is one model deployment of the simulated resource.
type Deployment struct {
	// Name is the deployment name used in URLs and in body.model.
	Name string `json:"name"`
	// Model is the model name, e.g. "gpt-4o-mini" or "text-embedding-3-small".
	// Models whose name contains "embedding" serve embeddings; others serve chat.
	Model string `json:"model"`
	// ModelVersion is appended to the model in responses ("gpt-4o-mini-2024-07-18").
	ModelVersion string `json:"model_version,omitempty"`
	// Type is TypeStandard (default) or TypeGlobalBatch.
	Type string `json:"type,omitempty"`
	// TPM is the tokens-per-minute limit. 0 means unlimited.
	TPM int64 `json:"tpm,omitempty"`
	// RPM is the requests-per-minute limit. 0 derives it from TPM (6 per 1,000
	// TPM, unlimited when TPM is 0); -1 means unlimited.
	RPM int64 `json:"rpm,omitempty"`
	// Dimensions is the embedding size. Default by model: 3072 for
	// text-embedding-3-large, 1536 otherwise.
	Dimensions int `json:"dimensions,omitempty"`
	// EnqueuedTokenQuota is the enqueued-token limit of a global-batch
	// deployment. 0 means unlimited.
	EnqueuedTokenQuota int64 `json:"enqueued_token_quota,omitempty"`
	// QuotaBehaviour is QuotaFailFast (default) or QuotaFailAtValidation.
	QuotaBehaviour string `json:"quota_behaviour,omitempty"`
	// BatchLinesPerMinute overrides Batch.LinesPerMinute for this deployment.
	BatchLinesPerMinute float64 `json:"batch_lines_per_minute,omitempty"`
}

// Quirks switch on response shapes that Azure's documentation samples show but
// that the current service is not known to send.
type Quirks struct {
	// EmptyFileIDs writes "" instead of null for absent output_file_id and
	// error_file_id (the fail-fast sample).
	EmptyFileIDs bool `json:"empty_file_ids"`
	// ISOTimestamps writes created_at and expires_at of batches as ISO-8601
	// strings (the 2024-07 preview sample).
	ISOTimestamps bool `json:"iso_timestamps"`
	// CapitalStatus writes batch statuses capitalised ("Validating").
	CapitalStatus bool `json:"capital_status"`
	// NoEnqueuedHeaderOnV1 omits deployment-enqueued-tokens on the v1 surface.
	NoEnqueuedHeaderOnV1 bool `json:"no_enqueued_header_on_v1"`
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("90s", "24h") or as a number of seconds.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("decode duration: %w", err)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("parse duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	secs, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("parse duration seconds %q: %w", b, err)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// LoadConfig reads a JSON configuration file. Unknown fields are an error so
// that a misspelt switch does not go unnoticed.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("decode config %s: %w", path, err)
	}
	return cfg, nil
}

// Validate reports every problem of the configuration, defaults applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if len(c.Deployments) == 0 {
		errs = append(errs, errors.New("deployments: at least one is required"))
	}
	seen := make(map[string]bool, len(c.Deployments))
	for i, d := range c.Deployments {
		switch {
		case d.Name == "":
			errs = append(errs, fmt.Errorf("deployments[%d].name: required", i))
		case seen[d.Name]:
			errs = append(errs, fmt.Errorf("deployments[%d].name: duplicate %q", i, d.Name))
		}
		seen[d.Name] = true
		if d.Model == "" {
			errs = append(errs, fmt.Errorf("deployments[%d].model: required", i))
		}
		if d.Type != TypeStandard && d.Type != TypeGlobalBatch {
			errs = append(errs, fmt.Errorf("deployments[%d].type: %q is not %q or %q", i, d.Type, TypeStandard, TypeGlobalBatch))
		}
		if d.QuotaBehaviour != QuotaFailFast && d.QuotaBehaviour != QuotaFailAtValidation {
			errs = append(errs, fmt.Errorf("deployments[%d].quota_behaviour: %q is not %q or %q", i, d.QuotaBehaviour, QuotaFailFast, QuotaFailAtValidation))
		}
		if d.TPM < 0 || d.RPM < -1 || d.EnqueuedTokenQuota < 0 {
			errs = append(errs, fmt.Errorf("deployments[%d]: negative limit", i))
		}
	}
	for i, k := range c.Keys {
		if k == "" {
			errs = append(errs, fmt.Errorf("keys[%d]: empty", i))
		}
	}
	if c.Speed != nil && (*c.Speed < 0 || *c.Speed > MaxSpeed) {
		errs = append(errs, fmt.Errorf("speed: %v outside [0, %v]", *c.Speed, MaxSpeed))
	}
	errs = append(errs, c.Batch.validate()...)
	errs = append(errs, c.ContentFilter.validate()...)
	for i, r := range c.Faults {
		if err := r.validate(); err != nil {
			errs = append(errs, fmt.Errorf("faults[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
