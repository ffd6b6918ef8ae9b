package azopenai

import (
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/outcome"
)

// verdict is what a queue call does about a failed attempt.
type verdict int

const (
	retry    verdict = iota // transient: wait and try again, within the budget
	refused                 // content filter: a result
	rejected                // the request can never succeed
	halt                    // transient, but not worth retrying in process
)

// queueVerdict reads classify's answer for a queue call, with the service's
// wait hint. It differs from the batch calls' reading in two rows only (see
// the table in the package documentation): a 404 names a wrong deployment,
// which an operator fixes, so it halts like a 401 rather than rejecting
// the document; and a 409 is retried.
func queueVerdict(err error) (verdict, time.Duration) {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return retry, 0 // connection reset, attempt timeout, malformed reply
	}
	hint := retryAfter(apiErr.Response)
	c := classify(err)
	switch {
	case errors.Is(c, ErrContentFilter):
		return refused, 0
	case errors.Is(c, batch.ErrAzureConflict):
		return retry, hint
	case errors.Is(c, batch.ErrAzureAuth), errors.Is(c, batch.ErrAzureNotFound), errors.Is(c, batch.ErrQuotaFull):
		return halt, hint
	case outcome.Of(c) == outcome.Transient:
		return retry, hint
	}
	return rejected, 0
}

// promptCategories reads the filtered categories of a 400 content_filter
// error from innererror.content_filter_result (the service),
// innererror.content_filter_results (the docs) or
// inner_error.content_filter_results (the 2024-10-21 spec).
func promptCategories(apiErr *openai.Error) []string {
	for _, key := range []string{"innererror", "inner_error"} {
		f, ok := apiErr.JSON.ExtraFields[key]
		if !ok {
			continue
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal([]byte(f.Raw()), &inner) != nil {
			continue
		}
		for _, k := range []string{"content_filter_result", "content_filter_results"} {
			if cats := filtered(inner[k]); cats != nil {
				return cats
			}
		}
	}
	return nil
}

// completionCategories reads choices[i].content_filter_results.
func completionCategories(ch openai.ChatCompletionChoice) []string {
	if f, ok := ch.JSON.ExtraFields["content_filter_results"]; ok {
		return filtered(json.RawMessage(f.Raw()))
	}
	return nil
}

// filtered returns the sorted names of the categories marked filtered in a
// content_filter_results object, or nil.
func filtered(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var results map[string]struct {
		Filtered bool `json:"filtered"`
	}
	if json.Unmarshal(raw, &results) != nil {
		return nil
	}
	var cats []string
	for name, r := range results {
		if r.Filtered {
			cats = append(cats, name)
		}
	}
	slices.Sort(cats)
	return cats
}
