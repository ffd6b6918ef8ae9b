package batch

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/outcome"
)

// This file holds Azure OpenAI's Files and Batches values as the control
// plane sees them: what the Azure interface (service.go) takes and returns.
// The adapter (package azopenai) reads Azure's wire format into them; the
// control plane, the audit and the doors read them, and none of them needs
// the adapter or an SDK to do so.

// AzureStatus is an Azure batch's status, always lower case (Azure's 2024
// preview samples show "Validating").
type AzureStatus string

// The Azure batch statuses.
const (
	AzureValidating AzureStatus = "validating"
	AzureFailed     AzureStatus = "failed"
	AzureInProgress AzureStatus = "in_progress"
	AzureFinalizing AzureStatus = "finalizing"
	AzureCompleted  AzureStatus = "completed"
	AzureExpired    AzureStatus = "expired"
	AzureCancelling AzureStatus = "cancelling"
	AzureCancelled  AzureStatus = "cancelled"
)

// Terminal reports whether the status is final: completed, failed, expired
// or cancelled.
func (s AzureStatus) Terminal() bool {
	switch s {
	case AzureCompleted, AzureFailed, AzureExpired, AzureCancelled:
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

// DefaultOutputExpiry is the output_expires_after batches are created
// with unless configured otherwise: 30 days, the longest Azure allows
// (outputs are copied at once; the margin is for outages).
const DefaultOutputExpiry = 30 * 24 * time.Hour

// AzureBatch is a batch job as Azure reports it.
type AzureBatch struct {
	ID           string
	Status       AzureStatus
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

// BatchError is one entry of an Azure batch's errors.data. Line is 0 when
// Azure gives none.
type BatchError struct {
	Code    string
	Message string
	Param   string
	Line    int64
}

// RequestCounts are an Azure batch's line counts; zero while validating.
// In JSON they are Azure's request_counts members; a job stored before they
// had tags ("Total") still reads, decoding being case-insensitive.
type RequestCounts struct {
	Total     int64 `json:"total"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
}

// Submission returns the offpath submission key in the metadata; ok is false
// for a batch offpath did not create.
func (b AzureBatch) Submission() (job string, part, attempt int, ok bool) {
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
func (b AzureBatch) FilesReady() bool {
	if !b.Status.Terminal() {
		return false
	}
	return b.Status != AzureCompleted || b.OutputFileID != "" || b.ErrorFileID != ""
}

// Err classifies a failed batch: token_limit_exceeded during validation is
// ErrQuotaFull (transient: resubmit the same file later under a new
// attempt); any other validation failure is rejected. It is nil for every
// other status, including expired and cancelled, whose partial output is
// harvested like a completed batch's.
func (b AzureBatch) Err() error {
	if b.Status != AzureFailed {
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

// AzureFile is a file on the Azure OpenAI resource.
type AzureFile struct {
	ID        string
	Filename  string
	Purpose   string // "batch" for inputs, "batch_output" for outputs
	Status    string // "pending", "processed" or "error"
	Bytes     int64
	CreatedAt time.Time
	ExpiresAt time.Time // zero when the file does not expire
}

// Submission is one Azure job offpath wants to exist: one part of one
// offpath job, at one attempt. The triple (JobID, Part, Attempt) is written
// to the batch's metadata (MetaJob, MetaPart, MetaAttempt) and is what
// makes Azure.CreateBatch idempotent.
type Submission struct {
	InputFileID string
	JobID       string
	Part        int
	// Attempt numbers resubmissions of the same part (after the quota
	// refused it, or validation failed it with token_limit_exceeded), so
	// that a lookup never mistakes the old, failed batch for the new one.
	Attempt int
	// Endpoint is the batch route. Default "/chat/completions".
	Endpoint string
	// Metadata is added to the batch (at most 13 pairs: Azure allows 16
	// and offpath uses 3); keys starting with "offpath_" are refused.
	Metadata map[string]string
	// MaybeCreated says an earlier call for this submission may have created
	// the batch (it returned ErrAmbiguous, the process stopped during it, or
	// the caller's record of it may be lost or stale): CreateBatch then
	// looks for it before creating.
	MaybeCreated bool
	// Since bounds that lookup: batches created before it (less a minute
	// for clock skew) cannot be this submission's, and the newest-first
	// listing stops there. Zero examines the adapter's lookup limit of
	// batches.
	Since time.Time
}

// Created is the outcome of Azure.CreateBatch.
type Created struct {
	Batch AzureBatch
	// EnqueuedTokens is Azure's estimate for the file
	// (deployment-enqueued-tokens), MaxEnqueuedTokens the deployment's limit
	// (deployment-maximum-enqueued-tokens); -1 when absent (v1 may not send
	// them) or when the batch was recovered by lookup.
	EnqueuedTokens    int64
	MaxEnqueuedTokens int64
	// Recovered is true when the batch was found by its submission key
	// rather than created by this call. The batch found is the
	// submission's whatever input file it names: Batch.InputFileID may
	// differ from the Submission's when an earlier upload's reply was lost
	// and the file uploaded again; the caller keeps the batch's file and
	// deletes its own.
	Recovered bool
}

// Answer is the service's final answer to one chat completion request sent
// synchronously as it stands (Sync): the HTTP status and the response
// body, exactly as a Global Batch output line carries them ({"error": ...}
// for a refusal or a rejection).
type Answer struct {
	StatusCode int
	Body       []byte
}
