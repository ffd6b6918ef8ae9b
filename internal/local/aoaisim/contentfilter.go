package aoaisim

import (
	"net/http"
	"strings"
)

// Content-filter categories.
const (
	catHate      = "hate"
	catSelfHarm  = "self_harm"
	catSexual    = "sexual"
	catViolence  = "violence"
	catJailbreak = "jailbreak"
)

func isCategory(c string) bool {
	switch c {
	case catHate, catSelfHarm, catSexual, catViolence, catJailbreak:
		return true
	}
	return false
}

// severityResult is a severity-graded category result.
type severityResult struct {
	Filtered bool   `json:"filtered"`
	Severity string `json:"severity"`
}

// detectedResult is a detection category result (jailbreak, protected material).
type detectedResult struct {
	Filtered bool `json:"filtered"`
	Detected bool `json:"detected"`
}

// promptFilterResult is the content_filter_results of one prompt, as in
// prompt_filter_results[i] and in the 400's innererror.
type promptFilterResult struct {
	Hate      severityResult `json:"hate"`
	Jailbreak detectedResult `json:"jailbreak"`
	SelfHarm  severityResult `json:"self_harm"`
	Sexual    severityResult `json:"sexual"`
	Violence  severityResult `json:"violence"`
}

// completionFilterResult is choices[i].content_filter_results.
type completionFilterResult struct {
	Hate                  severityResult `json:"hate"`
	ProtectedMaterialCode detectedResult `json:"protected_material_code"`
	ProtectedMaterialText detectedResult `json:"protected_material_text"`
	SelfHarm              severityResult `json:"self_harm"`
	Sexual                severityResult `json:"sexual"`
	Violence              severityResult `json:"violence"`
}

type promptFilterEntry struct {
	PromptIndex          int                `json:"prompt_index"`
	ContentFilterResults promptFilterResult `json:"content_filter_results"`
}

func safePrompt() promptFilterResult {
	safe := severityResult{Severity: "safe"}
	return promptFilterResult{Hate: safe, SelfHarm: safe, Sexual: safe, Violence: safe}
}

func safeCompletion() completionFilterResult {
	safe := severityResult{Severity: "safe"}
	return completionFilterResult{Hate: safe, SelfHarm: safe, Sexual: safe, Violence: safe}
}

// flagPrompt marks category as filtered at medium severity.
func flagPrompt(r *promptFilterResult, category string) {
	hit := severityResult{Filtered: true, Severity: "medium"}
	switch category {
	case catHate:
		r.Hate = hit
	case catSelfHarm:
		r.SelfHarm = hit
	case catSexual:
		r.Sexual = hit
	case catJailbreak:
		r.Jailbreak = detectedResult{Filtered: true, Detected: true}
	default:
		r.Violence = hit
	}
}

func flagCompletion(r *completionFilterResult, category string) {
	hit := severityResult{Filtered: true, Severity: "medium"}
	switch category {
	case catHate:
		r.Hate = hit
	case catSelfHarm:
		r.SelfHarm = hit
	case catSexual:
		r.Sexual = hit
	default: // jailbreak is a prompt category; a completion reports violence
		r.Violence = hit
	}
}

// contentFilter matches trigger phrases. Phrases are lower-cased once.
type contentFilter struct {
	prompt     []Trigger
	completion []Trigger
	style      string
}

func newContentFilter(cfg ContentFilter) *contentFilter {
	lower := func(ts []Trigger) []Trigger {
		out := make([]Trigger, len(ts))
		for i, t := range ts {
			out[i] = Trigger{Phrase: strings.ToLower(t.Phrase), Category: t.Category}
		}
		return out
	}
	return &contentFilter{prompt: lower(cfg.PromptTriggers), completion: lower(cfg.CompletionTriggers), style: cfg.InnerErrorStyle}
}

// lowerAll lower-cases texts once for both trigger lists.
func lowerAll(texts []string) []string {
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = strings.ToLower(t)
	}
	return out
}

// match returns the category of the first trigger found in any of the
// lower-cased texts.
func match(triggers []Trigger, lowered []string) (string, bool) {
	for _, t := range lowered {
		for _, tr := range triggers {
			if strings.Contains(t, tr.Phrase) {
				return tr.Category, true
			}
		}
	}
	return "", false
}

// promptBlocked builds Azure's HTTP 400 content_filter error for a prompt
// that tripped category, with innererror spelt as configured.
func (f *contentFilter) promptBlocked(category string) *apiError {
	e := newAPIError(http.StatusBadRequest, "content_filter",
		"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766")
	e.Param = strPtr("prompt")
	e.Status = http.StatusBadRequest
	result := safePrompt()
	flagPrompt(&result, category)
	switch f.style {
	case InnerErrorDocs:
		e.InnerError = innerErrorPlural{Code: "ResponsibleAIPolicyViolation", Results: result}
	case InnerErrorSpec:
		e.InnerSpec = innerErrorPlural{Code: "ResponsibleAIPolicyViolation", Results: result}
	default:
		e.InnerError = innerErrorSingular{Code: "ResponsibleAIPolicyViolation", Result: result}
	}
	return e
}

type innerErrorSingular struct {
	Code   string             `json:"code"`
	Result promptFilterResult `json:"content_filter_result"`
}

type innerErrorPlural struct {
	Code    string             `json:"code"`
	Results promptFilterResult `json:"content_filter_results"`
}
