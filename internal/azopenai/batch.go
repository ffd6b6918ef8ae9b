package azopenai

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/offpath/offpath/internal/outcome"
)

// Status is a batch status, always lower case (Azure's 2024 preview samples
// show "Validating").
type Status string

// Batch statuses.
const (
	StatusValidating Status = "validating"
	StatusFailed     Status = "failed"
	StatusInProgress Status = "in_progress"
	StatusFinalizing Status = "finalizing"
	StatusCompleted  Status = "completed"
	StatusExpired    Status = "expired"
	StatusCancelling Status = "cancelling"
	StatusCancelled  Status = "cancelled"
)

// Terminal reports whether the status is final: completed, failed, expired
// or cancelled.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Metadata keys offpath writes on every batch it creates: together they are
// the submission key that makes create idempotent, and their absence marks a
// batch offpath did not create (a second door).
const (
	MetaJob     = "offpath_job"
	MetaPart    = "offpath_part"
	MetaAttempt = "offpath_attempt"
)

// Batch is a batch job as Azure reports it.
type Batch struct {
	ID           string
	Status       Status
	Endpoint     string
	InputFileID  string
	OutputFileID string // "" until there is one (Azure sends null or "")
	ErrorFileID  string // present even on success, then an empty file
	// Errors are the validation errors of a failed batch.
	Errors        []BatchError
	RequestCounts RequestCounts
	CreatedAt     time.Time
	InProgressAt  time.Time
	ExpiresAt     time.Time
	FinalizingAt  time.Time
	CompletedAt   time.Time
	FailedAt      time.Time
	ExpiredAt     time.Time
	CancellingAt  time.Time
	CancelledAt   time.Time
	Metadata      map[string]string
}

// BatchError is one entry of errors.data. Line is 0 when Azure gives none.
type BatchError struct {
	Code    string
	Message string
	Param   string
	Line    int64
}

// RequestCounts are the batch's line counts; zero while validating. In
// JSON they are Azure's request_counts members; a job stored before they
// had tags ("Total") still reads, decoding being case-insensitive.
type RequestCounts struct {
	Total     int64 `json:"total"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
}

// Submission returns the offpath submission key in the metadata; ok is false
// for a batch offpath did not create.
func (b Batch) Submission() (job string, part, attempt int, ok bool) {
	job = b.Metadata[MetaJob]
	p, err1 := strconv.Atoi(b.Metadata[MetaPart])
	a, err2 := strconv.Atoi(b.Metadata[MetaAttempt])
	if job == "" || err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return job, p, a, true
}

// FilesReady reports whether a terminal batch's output can be harvested:
// a completed batch has been seen without its file ids for a while, so
// completed counts only once one of them is set.
func (b Batch) FilesReady() bool {
	if !b.Status.Terminal() {
		return false
	}
	return b.Status != StatusCompleted || b.OutputFileID != "" || b.ErrorFileID != ""
}

// Err classifies a failed batch: token_limit_exceeded during validation is
// ErrQuotaFull (transient: resubmit the same file later under a new
// attempt); any other validation failure is rejected. It is nil for every
// other status, including expired and cancelled, whose partial output is
// harvested like a completed batch's.
func (b Batch) Err() error {
	if b.Status != StatusFailed {
		return nil
	}
	for _, e := range b.Errors {
		if e.Code == "token_limit_exceeded" || strings.Contains(e.Message, "token_limit_exceeded") {
			return outcome.Retry(&QuotaError{Code: e.Code, Message: e.Message, EnqueuedTokens: -1, MaxEnqueuedTokens: -1}, 0)
		}
	}
	code := "unknown"
	if len(b.Errors) > 0 {
		code = b.Errors[0].Code
	}
	return outcome.Reject("batch failed validation: "+code, fmt.Errorf("batch %s failed: %v", b.ID, b.Errors))
}

func fromSDKBatch(ob *openai.Batch) Batch {
	b := Batch{
		ID: ob.ID, Status: Status(strings.ToLower(string(ob.Status))), Endpoint: ob.Endpoint,
		InputFileID: ob.InputFileID, OutputFileID: ob.OutputFileID, ErrorFileID: ob.ErrorFileID,
		RequestCounts: RequestCounts{ob.RequestCounts.Total, ob.RequestCounts.Completed, ob.RequestCounts.Failed},
		CreatedAt:     unixOrISO(ob.CreatedAt, ob.JSON.CreatedAt),
		InProgressAt:  unixOrISO(ob.InProgressAt, ob.JSON.InProgressAt),
		ExpiresAt:     unixOrISO(ob.ExpiresAt, ob.JSON.ExpiresAt),
		FinalizingAt:  unixOrISO(ob.FinalizingAt, ob.JSON.FinalizingAt),
		CompletedAt:   unixOrISO(ob.CompletedAt, ob.JSON.CompletedAt),
		FailedAt:      unixOrISO(ob.FailedAt, ob.JSON.FailedAt),
		ExpiredAt:     unixOrISO(ob.ExpiredAt, ob.JSON.ExpiredAt),
		CancellingAt:  unixOrISO(ob.CancellingAt, ob.JSON.CancellingAt),
		CancelledAt:   unixOrISO(ob.CancelledAt, ob.JSON.CancelledAt),
		Metadata:      maps.Clone(map[string]string(ob.Metadata)),
	}
	for _, e := range ob.Errors.Data {
		b.Errors = append(b.Errors, BatchError{Code: e.Code, Message: e.Message, Param: e.Param, Line: e.Line})
	}
	return b
}

// unixOrISO reads a unix-seconds timestamp, or an ISO-8601 string (which
// openai-go decodes as 0, keeping the raw text), or nothing.
func unixOrISO(v int64, f respjson.Field) time.Time {
	if v != 0 {
		return time.Unix(v, 0).UTC()
	}
	raw := f.Raw()
	if !strings.HasPrefix(raw, `"`) {
		return time.Time{}
	}
	var s string
	if json.Unmarshal([]byte(raw), &s) != nil {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
