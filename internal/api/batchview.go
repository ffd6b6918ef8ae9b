package api

import (
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
)

// jobView is a batch job as its tenant sees it.
type jobView struct {
	ID              string            `json:"id"`
	State           batch.State       `json:"state"`
	Final           batch.State       `json:"final,omitempty"`
	Alias           string            `json:"alias"`
	Items           int               `json:"items"`
	Source          string            `json:"source"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	IdempotencyKey  string            `json:"idempotency_key,omitempty"`
	EstimatedTokens int64             `json:"estimated_tokens"`
	CancelRequested bool              `json:"cancel_requested,omitempty"`
	Urgent          bool              `json:"urgent,omitempty"`
	Created         time.Time         `json:"created"`
	Updated         time.Time         `json:"updated"`
	// CompleteBy is when the tenant needs the answers.
	CompleteBy *time.Time `json:"complete_by,omitempty"`
	// ExpectedBy is when the last submitted part's completion window ends.
	ExpectedBy *time.Time `json:"expected_by,omitempty"`
	// Finished is when the last part ended; Harvested when its results and
	// usage were in.
	Finished      *time.Time          `json:"finished,omitempty"`
	Harvested     *time.Time          `json:"harvested,omitempty"`
	RequestCounts batch.RequestCounts `json:"request_counts"`
	// Outcomes and Usage count the harvested parts so far.
	Outcomes batch.Counts     `json:"outcomes"`
	Usage    ledger.UsageView `json:"usage"`
	Parts    []partView       `json:"parts"`
	Links    jobLinks         `json:"links"`
}

type partView struct {
	Index           int               `json:"index"`
	Status          batch.PartStatus  `json:"status"`
	AzureStatus     batch.AzureStatus `json:"azure_status,omitempty"`
	AzureBatchID    string            `json:"azure_batch_id,omitempty"`
	Items           int               `json:"items"`
	EstimatedTokens int64             `json:"estimated_tokens"`
	// Deployment is where the part runs (or is tried next), at Price;
	// Placement and PlacementDetail say why it went there.
	Deployment      string         `json:"deployment"`
	Price           *catalog.Price `json:"price,omitempty"`
	Placement       string         `json:"placement,omitempty"`
	PlacementDetail string         `json:"placement_detail,omitempty"`
	HeldReason      string         `json:"held_reason,omitempty"`
	// Packed: the part's items run in a batch shared with other small
	// jobs; its counts, results and usage are its own.
	Packed        bool                `json:"packed,omitempty"`
	NextAttemptAt *time.Time          `json:"next_attempt_at,omitempty"`
	RequestCounts batch.RequestCounts `json:"request_counts"`
	Errors        []partError         `json:"errors,omitempty"`
	Submitted     *time.Time          `json:"submitted,omitempty"`
	ExpectedBy    *time.Time          `json:"expected_by,omitempty"`
	Finished      *time.Time          `json:"finished,omitempty"`
	Harvested     *time.Time          `json:"harvested,omitempty"`
	Fallback      *fallbackView       `json:"fallback,omitempty"`
}

// fallbackView is a part's run through the synchronous deployment, for
// its job's complete_by.
type fallbackView struct {
	Reason     string         `json:"reason"`
	Detail     string         `json:"detail"`
	Started    time.Time      `json:"started"`
	Deployment string         `json:"deployment"`
	Price      *catalog.Price `json:"price,omitempty"`
	// Items are those its batch did not answer, Done of them answered so
	// far; FromBatch those its batch answered.
	Items     int              `json:"items"`
	Done      int              `json:"done"`
	FromBatch int64            `json:"from_batch"`
	Usage     ledger.UsageView `json:"usage"`
	Finished  *time.Time       `json:"finished,omitempty"`
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// viewFallback renders f, its cost at the synchronous price.
func (s *Server) viewFallback(alias string, f *batch.Fallback) *fallbackView {
	if f == nil {
		return nil
	}
	v := &fallbackView{Reason: f.Reason, Detail: f.Detail, Started: f.StartedAt, Deployment: f.Deployment,
		Items: f.Items, Done: f.Done, FromBatch: f.FromBatch, Finished: timePtr(f.FinishedAt)}
	u := f.Usage
	v.Usage = ledger.UsageView{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens,
		ReasoningTokens: u.ReasoningTokens, TotalTokens: u.PromptTokens + u.CompletionTokens, Requests: u.Requests, Refusals: u.Refusals}
	if s.o.Catalog != nil {
		if price, err := s.o.Catalog.Price(alias, catalog.Queue, f.Deployment); err == nil {
			v.Price = &price
			v.Usage.Cost = price.Cost(u.PromptTokens, u.CachedTokens, u.CompletionTokens)
		}
	}
	return v
}

type partError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

type jobLinks struct {
	Self    string `json:"self"`
	Results string `json:"results"`
	Cancel  string `json:"cancel"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (s *Server) viewJob(j *batch.Job) jobView {
	self := batchesPath + "/" + j.ID
	v := jobView{ID: j.ID, State: j.State, Final: j.Final, Alias: j.Alias, Items: j.Items, Source: j.Source,
		Metadata: j.Metadata, IdempotencyKey: j.IdempotencyKey, EstimatedTokens: j.EstimatedTokens,
		CancelRequested: j.CancelRequested, Urgent: j.Urgent, Created: j.Created, Updated: j.Updated, Harvested: timePtr(j.HarvestedAt),
		Outcomes: j.Counts(), Parts: make([]partView, len(j.Parts)), CompleteBy: timePtr(j.CompleteBy),
		Links: jobLinks{Self: self, Results: self + "/results", Cancel: self + "/cancel"}}
	var expected, finished time.Time
	ended := true
	var cost catalog.Money
	for i := range j.Parts {
		p := &j.Parts[i]
		pv := partView{Index: p.Index, Status: p.Status, AzureStatus: p.AzureStatus, AzureBatchID: p.BatchID, Items: p.Lines,
			EstimatedTokens: p.EstimatedTokens, HeldReason: p.HeldReason, RequestCounts: p.RequestCounts,
			Submitted: timePtr(p.SubmittedAt), ExpectedBy: timePtr(p.AzureExpiry), Finished: timePtr(p.FinishedAt),
			Harvested: timePtr(p.HarvestedAt), Deployment: p.Deployment, Packed: p.Pack != "", Placement: p.Placement, PlacementDetail: p.PlacementDetail}
		if s.o.Catalog != nil {
			if price, err := s.o.Catalog.Price(j.Alias, catalog.Batch, p.Deployment); err == nil {
				pv.Price = &price
			}
		}
		if p.Status == batch.PartPending {
			pv.HeldReason, pv.NextAttemptAt = p.HeldReason, timePtr(p.NextAttemptAt)
		} else {
			pv.HeldReason = ""
		}
		pv.Fallback = s.viewFallback(j.Alias, p.Fallback)
		if pv.Fallback != nil {
			cost += pv.Fallback.Usage.Cost
		}
		for _, e := range p.Errors {
			pv.Errors = append(pv.Errors, partError{Code: e.Code, Message: e.Message})
		}
		v.Parts[i] = pv
		v.RequestCounts.Total += p.RequestCounts.Total
		v.RequestCounts.Completed += p.RequestCounts.Completed
		v.RequestCounts.Failed += p.RequestCounts.Failed
		if p.AzureExpiry.After(expected) {
			expected = p.AzureExpiry
		}
		if p.Status == batch.PartPending || p.Status == batch.PartSubmitted || p.Status == batch.PartFallback {
			ended = false
		} else if p.FinishedAt.After(finished) {
			finished = p.FinishedAt
		}
		if s.o.Catalog != nil && p.Status == batch.PartHarvested {
			if price, err := s.o.Catalog.Price(j.Alias, catalog.Batch, p.Deployment); err == nil {
				cost += p.Usage.CostAt(price)
			}
		}
	}
	u := j.Usage()
	v.Usage = ledger.UsageView{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens,
		ReasoningTokens: u.ReasoningTokens, TotalTokens: u.PromptTokens + u.CompletionTokens, Requests: u.Requests,
		Refusals: u.Refusals, Cost: cost}
	if !ended {
		v.ExpectedBy = timePtr(expected)
	} else {
		v.Finished = timePtr(finished)
	}
	return v
}
