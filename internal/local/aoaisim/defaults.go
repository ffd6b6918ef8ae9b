package aoaisim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Defaults.
const (
	// DefaultKey is the API key accepted when Config.Keys is empty.
	DefaultKey = "aoaisim-key"
	// DefaultPromptTrigger blocks the prompt (HTTP 400 content_filter) when it
	// appears in any message and ContentFilter.PromptTriggers is nil.
	DefaultPromptTrigger = "SIM_FILTER_PROMPT"
	// DefaultCompletionTrigger blocks the completion (HTTP 200, finish_reason
	// content_filter) when it appears in any message and
	// ContentFilter.CompletionTriggers is nil.
	DefaultCompletionTrigger = "SIM_FILTER_COMPLETION"

	day = 24 * time.Hour
)

// Batch behaviour switches where Azure's documentation is uncertain.
const (
	// ExpiryExpire ends a job that is not done at expires_at in status expired,
	// with partial output (the state table of the batch how-to). Default.
	ExpiryExpire = "expire"
	// ExpiryContinue lets a job run past its window until done or cancelled (the
	// FAQ's "we don't expire the jobs").
	ExpiryContinue = "continue"

	// ErrorLineResponse writes a failed line as response.status_code >= 400 with
	// response.body.error (the synchronous shape). Default.
	ErrorLineResponse = "response"
	// ErrorLineError writes a failed line with a top-level error{code,message}
	// and response null.
	ErrorLineError = "error"

	// URLMatchNormalise accepts "/v1/chat/completions" and "/chat/completions"
	// as the same route, in lines and in the create call's endpoint. Default.
	URLMatchNormalise = "normalise"
	// URLMatchExact requires every line's url to be byte-identical to the first
	// line's; the endpoint is still compared after normalisation.
	URLMatchExact = "exact"

	// InnerErrorService writes innererror.content_filter_result (singular), as
	// real service responses do. Default.
	InnerErrorService = "service"
	// InnerErrorDocs writes innererror.content_filter_results (plural).
	InnerErrorDocs = "docs"
	// InnerErrorSpec writes inner_error.content_filter_results (2024-10-21 spec).
	InnerErrorSpec = "spec"
)

// BatchConfig sets how batch jobs run. Durations are simulated time.
type BatchConfig struct {
	// ValidationTime is spent in validating. Default 2m.
	ValidationTime Duration `json:"validation_time"`
	// LinesPerMinute is the processing rate of one job. Default 1000.
	LinesPerMinute float64 `json:"lines_per_minute"`
	// FinalizingTime is spent in finalizing. Default 1m.
	FinalizingTime Duration `json:"finalizing_time"`
	// CancellingTime is spent in cancelling (Azure: up to 10 min). Default 1m.
	CancellingTime Duration `json:"cancelling_time"`
	// CompletionWindow is the 24h window (expires_at = created_at + window).
	CompletionWindow Duration `json:"completion_window"`
	// MaxLines is the request limit per file (too_many_tasks). Default 100,000.
	MaxLines int `json:"max_lines"`
	// ShuffleWindow is how many finished lines are reordered together before
	// they are written, so output order differs from input order. Default 64.
	ShuffleWindow int `json:"shuffle_window"`
	// Expiry is ExpiryExpire (default) or ExpiryContinue.
	Expiry string `json:"expiry"`
	// OmitExpiredLines leaves the lines not run before expiry out of the error
	// file; by default they are written there with code batch_expired.
	OmitExpiredLines bool `json:"omit_expired_lines"`
	// ErrorLine is ErrorLineResponse (default) or ErrorLineError.
	ErrorLine string `json:"error_line"`
	// URLMatch is URLMatchNormalise (default) or URLMatchExact.
	URLMatch string `json:"url_match"`
	// IncludeLineID adds OpenAI's per-line "id":"batch_req_..." to output lines.
	IncludeLineID bool `json:"include_line_id"`
	// DefaultOutputExpiry is the output file lifetime when the create call has
	// no output_expires_after (Azure does not say; OpenAI uses 30 days).
	DefaultOutputExpiry Duration `json:"default_output_expiry"`
	// MinOutputExpiry and MaxOutputExpiry bound output_expires_after.seconds.
	// Default 14 and 30 days.
	MinOutputExpiry Duration `json:"min_output_expiry"`
	MaxOutputExpiry Duration `json:"max_output_expiry"`
}

// FilesConfig sets the Files API limits.
type FilesConfig struct {
	// MaxBytes is the upload size limit. Default 200 MB.
	MaxBytes int64 `json:"max_bytes"`
	// MaxWithoutExpiry caps batch files uploaded without expires_after.
	// Default 500.
	MaxWithoutExpiry int `json:"max_without_expiry"`
	// MaxWithExpiry caps batch files uploaded with expires_after. Default 10,000.
	MaxWithExpiry int `json:"max_with_expiry"`
	// MinExpiry and MaxExpiry bound expires_after.seconds. Default 14 and 30
	// days (Azure); OpenAI allows one hour as the minimum.
	MinExpiry Duration `json:"min_expiry"`
	MaxExpiry Duration `json:"max_expiry"`
	// ProcessingTime keeps a new file in status "pending" this long (simulated)
	// before "processed", as older Azure docs show. Default 0: processed at once.
	ProcessingTime Duration `json:"processing_time"`
}

// ContentFilter sets the simulated content filter. A trigger matches when its
// phrase appears, case-insensitively, in the text of any message.
type ContentFilter struct {
	// PromptTriggers block the prompt. nil means [DefaultPromptTrigger].
	PromptTriggers []Trigger `json:"prompt_triggers"`
	// CompletionTriggers block the completion. nil means [DefaultCompletionTrigger].
	CompletionTriggers []Trigger `json:"completion_triggers"`
	// InnerErrorStyle is InnerErrorService (default), InnerErrorDocs or
	// InnerErrorSpec.
	InnerErrorStyle string `json:"inner_error_style"`
}

// Trigger is a phrase and the filter category it trips. Category is one of
// hate, self_harm, sexual, violence (default) or jailbreak (prompts only).
type Trigger struct {
	Phrase   string `json:"phrase"`
	Category string `json:"category,omitempty"`
}

// withDefaults returns a copy of c with every default applied. Slices are
// copied so that the caller's Config is never modified.
func (c Config) withDefaults() Config {
	c.Keys = slices.Clone(c.Keys)
	c.Deployments = slices.Clone(c.Deployments)
	c.Faults = slices.Clone(c.Faults)
	c.ContentFilter.PromptTriggers = cloneTriggers(c.ContentFilter.PromptTriggers)
	c.ContentFilter.CompletionTriggers = cloneTriggers(c.ContentFilter.CompletionTriggers)
	c.applyDefaults()
	return c
}

// cloneTriggers copies ts, keeping nil distinct from empty.
func cloneTriggers(ts []Trigger) []Trigger {
	if ts == nil {
		return nil
	}
	return append([]Trigger{}, ts...)
}

func (c *Config) applyDefaults() {
	if len(c.Keys) == 0 {
		c.Keys = []string{DefaultKey}
	}
	c.DefaultMaxTokens = cmp.Or(c.DefaultMaxTokens, 4096)
	c.IdentityHeader = cmp.Or(c.IdentityHeader, DefaultIdentityHeader)
	c.Seed = cmp.Or(c.Seed, 1)
	for i := range c.Deployments {
		d := &c.Deployments[i]
		d.Type = cmp.Or(d.Type, TypeStandard)
		d.QuotaBehaviour = cmp.Or(d.QuotaBehaviour, QuotaFailFast)
		if d.RPM == 0 && d.TPM > 0 {
			d.RPM = max(1, d.TPM*6/1000)
		}
		if d.Dimensions == 0 && d.isEmbedding() {
			d.Dimensions = 1536
			if strings.Contains(d.Model, "3-large") {
				d.Dimensions = 3072
			}
		}
	}
	b := &c.Batch
	b.ValidationTime = cmp.Or(b.ValidationTime, Duration(2*time.Minute))
	b.LinesPerMinute = cmp.Or(b.LinesPerMinute, 1000)
	b.FinalizingTime = cmp.Or(b.FinalizingTime, Duration(time.Minute))
	b.CancellingTime = cmp.Or(b.CancellingTime, Duration(time.Minute))
	b.CompletionWindow = cmp.Or(b.CompletionWindow, Duration(day))
	b.MaxLines = cmp.Or(b.MaxLines, 100_000)
	b.ShuffleWindow = cmp.Or(b.ShuffleWindow, 64)
	b.Expiry = cmp.Or(b.Expiry, ExpiryExpire)
	b.ErrorLine = cmp.Or(b.ErrorLine, ErrorLineResponse)
	b.URLMatch = cmp.Or(b.URLMatch, URLMatchNormalise)
	b.DefaultOutputExpiry = cmp.Or(b.DefaultOutputExpiry, Duration(30*day))
	b.MinOutputExpiry = cmp.Or(b.MinOutputExpiry, Duration(14*day))
	b.MaxOutputExpiry = cmp.Or(b.MaxOutputExpiry, Duration(30*day))
	f := &c.Files
	f.MaxBytes = cmp.Or(f.MaxBytes, 200<<20)
	f.MaxWithoutExpiry = cmp.Or(f.MaxWithoutExpiry, 500)
	f.MaxWithExpiry = cmp.Or(f.MaxWithExpiry, 10_000)
	f.MinExpiry = cmp.Or(f.MinExpiry, Duration(14*day))
	f.MaxExpiry = cmp.Or(f.MaxExpiry, Duration(30*day))
	cf := &c.ContentFilter
	if cf.PromptTriggers == nil {
		cf.PromptTriggers = []Trigger{{Phrase: DefaultPromptTrigger}}
	}
	if cf.CompletionTriggers == nil {
		cf.CompletionTriggers = []Trigger{{Phrase: DefaultCompletionTrigger}}
	}
	for _, ts := range [][]Trigger{cf.PromptTriggers, cf.CompletionTriggers} {
		for i := range ts {
			ts[i].Category = cmp.Or(ts[i].Category, "violence")
		}
	}
	cf.InnerErrorStyle = cmp.Or(cf.InnerErrorStyle, InnerErrorService)
}

func (d Deployment) isEmbedding() bool { return strings.Contains(d.Model, "embedding") }

func (b BatchConfig) validate() []error {
	var errs []error
	if b.Expiry != ExpiryExpire && b.Expiry != ExpiryContinue {
		errs = append(errs, fmt.Errorf("batch.expiry: %q is not %q or %q", b.Expiry, ExpiryExpire, ExpiryContinue))
	}
	if b.ErrorLine != ErrorLineResponse && b.ErrorLine != ErrorLineError {
		errs = append(errs, fmt.Errorf("batch.error_line: %q is not %q or %q", b.ErrorLine, ErrorLineResponse, ErrorLineError))
	}
	if b.URLMatch != URLMatchNormalise && b.URLMatch != URLMatchExact {
		errs = append(errs, fmt.Errorf("batch.url_match: %q is not %q or %q", b.URLMatch, URLMatchNormalise, URLMatchExact))
	}
	if b.LinesPerMinute <= 0 || b.ShuffleWindow < 1 || b.MaxLines < 1 {
		errs = append(errs, errors.New("batch: lines_per_minute, shuffle_window and max_lines must be positive"))
	}
	return errs
}

func (c ContentFilter) validate() []error {
	var errs []error
	switch c.InnerErrorStyle {
	case InnerErrorService, InnerErrorDocs, InnerErrorSpec:
	default:
		errs = append(errs, fmt.Errorf("content_filter.inner_error_style: unknown %q", c.InnerErrorStyle))
	}
	for _, ts := range [][]Trigger{c.PromptTriggers, c.CompletionTriggers} {
		for _, t := range ts {
			if t.Phrase == "" {
				errs = append(errs, errors.New("content_filter: empty trigger phrase"))
			}
			if !isCategory(t.Category) {
				errs = append(errs, fmt.Errorf("content_filter: unknown category %q", t.Category))
			}
		}
	}
	return errs
}

// UnmarshalJSON accepts a bare phrase ("text") or {"phrase":..,"category":..}.
func (t *Trigger) UnmarshalJSON(b []byte) error {
	var phrase string
	if json.Unmarshal(b, &phrase) == nil {
		*t = Trigger{Phrase: phrase}
		return nil
	}
	type plain Trigger
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("decode trigger: %w", err)
	}
	*t = Trigger(p)
	return nil
}
