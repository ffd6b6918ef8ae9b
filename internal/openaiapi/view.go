package openaiapi

import (
	"encoding/json"
	"time"

	"github.com/offpath/offpath/internal/batch"
)

// batchObject is a batch in Azure OpenAI's shape.
type batchObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Errors           *batchErrors      `json:"errors"`
	InputFileID      *string           `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        *int64            `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    requestCounts     `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"`
}

type batchErrors struct {
	Object string       `json:"object"`
	Data   []batchError `json:"data"`
}

type batchError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int64  `json:"line"`
}

type requestCounts struct {
	Total     int64 `json:"total"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
}

// offpathView is what the reserved metadata key says about the job.
type offpathView struct {
	Job        string `json:"job"`
	State      string `json:"state"`
	Final      string `json:"final,omitempty"`
	Alias      string `json:"alias"`
	HeldReason string `json:"held_reason,omitempty"`
	Parts      int    `json:"parts"`
}

// completionWindow is Azure's, the only one there is.
const completionWindow = 24 * time.Hour

// status maps a job's state to a batch status (the package documentation
// has the table). A batch is completed, failed, expired or cancelled only
// once its output is harvested into platform storage, so that a client
// that sees a terminal status can always download the output.
func status(j *batch.Job) string {
	if j.State != batch.Harvested && !j.CancelRequested && fallingBack(j) {
		return string(batch.AzureInProgress)
	}
	switch j.State {
	case batch.Accepted, batch.Held:
		return string(batch.AzureValidating)
	case batch.Completed, batch.Failed, batch.Expired, batch.Cancelled:
		if j.CancelRequested {
			return string(batch.AzureCancelling)
		}
		return string(batch.AzureFinalizing)
	case batch.Harvested:
		return string(j.Final)
	}
	// Submitted: some part is at Azure.
	if j.CancelRequested {
		return string(batch.AzureCancelling)
	}
	running, ended := 0, 0
	for i := range j.Parts {
		switch p := &j.Parts[i]; {
		case p.Status == batch.PartDone || p.Status == batch.PartHarvested:
			ended++
		case p.Status == batch.PartSubmitted && p.AzureStatus.Terminal():
			ended++
		case p.Status == batch.PartSubmitted && p.AzureStatus != batch.AzureValidating && p.AzureStatus != "":
			running++
		}
	}
	switch {
	case running > 0 || (ended > 0 && ended < len(j.Parts)):
		return string(batch.AzureInProgress)
	case ended == len(j.Parts):
		return string(batch.AzureFinalizing)
	}
	return string(batch.AzureValidating)
}

// fallingBack reports whether a part of the job has given up on its
// batch for the job's complete_by and has items still to run
// synchronously: the batch is in progress, whatever its Azure batch did.
func fallingBack(j *batch.Job) bool {
	for i := range j.Parts {
		if p := &j.Parts[i]; p.Fallback != nil && p.Status != batch.PartHarvested {
			return true
		}
	}
	return false
}

// view renders a job as a batch.
func (s *Server) view(j *batch.Job) batchObject {
	st := status(j)
	b := batchObject{ID: batchIDPrefix + j.ID, Object: "batch", Endpoint: "/chat/completions", CompletionWindow: "24h",
		Status: st, CreatedAt: j.Created.Unix(), ExpiresAt: timeOrNil(j.Created.Add(completionWindow)), Metadata: map[string]string{}}
	if e := j.Attributes[attrEndpoint]; e != "" {
		b.Endpoint = e
	}
	if f := j.Attributes[attrInputFile]; f != "" {
		b.InputFileID = &f
	}
	for k, v := range j.Metadata {
		b.Metadata[k] = v
	}
	ov := offpathView{Job: j.ID, State: string(j.State), Final: string(j.Final), Alias: j.Alias, Parts: len(j.Parts)}
	var inProgress, finalizing time.Time
	var rc requestCounts
	rc.Total = int64(j.Items)
	for i := range j.Parts {
		p := &j.Parts[i]
		if ov.HeldReason == "" && p.Status == batch.PartPending {
			ov.HeldReason = p.HeldReason
		}
		if !p.SubmittedAt.IsZero() && (inProgress.IsZero() || p.SubmittedAt.Before(inProgress)) {
			inProgress = p.SubmittedAt
		}
		if p.FinishedAt.After(finalizing) {
			finalizing = p.FinishedAt
		}
		rc.Completed += p.RequestCounts.Completed
		rc.Failed += p.RequestCounts.Failed
		if p.Fallback != nil { // the items the fallback answered, as Azure counts them
			rc.Completed += p.Fallback.Counts.OK
			rc.Failed += p.Fallback.Counts.Refused + p.Fallback.Counts.Failed
		}
		for _, e := range p.Errors {
			if b.Errors == nil {
				b.Errors = &batchErrors{Object: "list"}
			}
			be := batchError{Code: e.Code, Message: e.Message}
			if e.Param != "" {
				be.Param = &e.Param
			}
			if e.Line > 0 {
				be.Line = &e.Line
			}
			b.Errors.Data = append(b.Errors.Data, be)
		}
	}
	if ovJSON, err := json.Marshal(ov); err == nil {
		b.Metadata[reservedMetadataKey] = string(ovJSON)
	}
	b.InProgressAt = timeOrNil(inProgress)
	if st == string(batch.AzureCancelling) || (j.CancelRequested && j.State == batch.Harvested) {
		b.CancellingAt = timeOrNil(j.CancelRequestedAt)
	}
	if j.State == batch.Harvested {
		// Every line is in one of the two files: what Azure never ran
		// (cancelled or expired before it) is in the error file.
		rc.Failed = rc.Total - rc.Completed
		out, errs := outputFileIDOf(j.ID, kindOutput), outputFileIDOf(j.ID, kindErrors)
		b.OutputFileID, b.ErrorFileID = &out, &errs
		if finalizing.IsZero() {
			finalizing = j.HarvestedAt
		}
		b.FinalizingAt = timeOrNil(finalizing)
		end := timeOrNil(j.HarvestedAt)
		switch j.Final {
		case batch.Completed:
			b.CompletedAt = end
		case batch.Failed:
			b.FailedAt = end
		case batch.Expired:
			b.ExpiredAt = end
		case batch.Cancelled:
			b.CancelledAt = end
		}
	} else if st == string(batch.AzureFinalizing) {
		b.FinalizingAt = timeOrNil(finalizing)
	}
	b.RequestCounts = rc
	return b
}
