package llm

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/openai/openai-go/v3"
)

// verdict is what to do about a failed attempt.
type verdict int

const (
	retry    verdict = iota // transient: wait and try again, within the budget
	refused                 // content filter: a result
	rejected                // the request can never succeed
	halt                    // transient, but not worth retrying in process
)

// classify decides about err, the error of one attempt, and extracts the
// service's wait hint.
func classify(err error) (verdict, time.Duration) {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return retry, 0 // connection reset, attempt timeout, malformed reply
	}
	hint := retryAfter(apiErr.Response)
	switch s := apiErr.StatusCode; {
	case s == http.StatusBadRequest && apiErr.Code == "content_filter":
		return refused, 0
	case s == http.StatusTooManyRequests, s == http.StatusRequestTimeout, s == http.StatusConflict, s >= 500:
		return retry, hint
	case s == http.StatusUnauthorized, s == http.StatusForbidden, s == http.StatusNotFound:
		return halt, hint
	}
	return rejected, 0
}

// retryAfter reads retry-after-ms, then Retry-After (seconds or an HTTP
// date). It returns 0 when neither is usable.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(resp.Header.Get("retry-after-ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := resp.Header.Get("Retry-After")
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
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
