package aoaisim

import (
	"strings"
	"sync"
	"time"
)

// Batch statuses.
const (
	statusValidating = "validating"
	statusFailed     = "failed"
	statusInProgress = "in_progress"
	statusFinalizing = "finalizing"
	statusCompleted  = "completed"
	statusExpired    = "expired"
	statusCancelling = "cancelling"
	statusCancelled  = "cancelled"
)

func terminal(status string) bool {
	switch status {
	case statusCompleted, statusFailed, statusExpired, statusCancelled:
		return true
	}
	return false
}

// batchError is one entry of errors.data.
type batchError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

// batch is a batch job. Fields below the mutex note are guarded by
// batchStore.mu; the others are set at creation and never change.
type batch struct {
	ID               string
	Endpoint         string
	InputFileID      string
	CompletionWindow string
	Deployment       string // from the first input line; "" when unreadable
	Metadata         map[string]string
	OutputExpiry     time.Duration
	EstimatedTokens  int64
	ticket           int64         // admission order (admissionGate)
	pos              int           // index in batchStore.order
	wake             chan struct{} // cancel wakes the worker; buffered
	CreatedAt        time.Time
	ExpiresAt        time.Time // created_at + completion window

	// guarded by batchStore.mu
	Status          string
	InProgressAt    time.Time
	FinalizingAt    time.Time
	CompletedAt     time.Time
	FailedAt        time.Time
	ExpiredAt       time.Time
	CancellingAt    time.Time
	CancelledAt     time.Time
	OutputFileID    string
	ErrorFileID     string
	OutputVisibleAt time.Time // output/error file IDs hidden before (fault)
	Errors          []batchError
	Total           int
	Completed       int
	Failed          int
	Reserved        int64 // enqueued tokens held
}

// batchStore holds every batch in creation order.
type batchStore struct {
	mu    sync.Mutex
	byID  map[string]*batch
	order []*batch
}

func newBatchStore() *batchStore {
	return &batchStore{byID: make(map[string]*batch)}
}

func (bs *batchStore) add(b *batch) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b.pos = len(bs.order)
	bs.byID[b.ID] = b
	bs.order = append(bs.order, b)
}

// update runs fn on b under the store lock.
func (bs *batchStore) update(b *batch, fn func(b *batch)) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	fn(b)
}

// snapshot renders a batch under the lock.
func (bs *batchStore) snapshot(id string, now time.Time, q Quirks) (batchObject, *batch, bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.byID[id]
	if !ok {
		return batchObject{}, nil, false
	}
	return b.object(now, q), b, true
}

// page renders the limit batches that follow the batch after ("" for the
// newest) in the list's order, newest first; an unknown cursor gives an
// empty page. Only the page's batches are rendered, so listing every
// batch page by page costs as much as the batches listed.
func (bs *batchStore) page(after string, limit int, now time.Time, q Quirks) listPage[batchObject] {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	next := len(bs.order) - 1 // index in order of the page's first batch
	if after != "" {
		b, ok := bs.byID[after]
		if !ok {
			next = -1
		} else {
			next = b.pos - 1
		}
	}
	page := listPage[batchObject]{Object: "list", Data: []batchObject{}}
	for i := next; i >= 0 && len(page.Data) < limit; i-- {
		page.Data = append(page.Data, bs.order[i].object(now, q))
	}
	page.HasMore = next-len(page.Data) >= 0
	if len(page.Data) > 0 {
		first, last := page.Data[0].ID, page.Data[len(page.Data)-1].ID
		page.FirstID, page.LastID = &first, &last
	}
	return page
}

type requestCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

type batchErrors struct {
	Object string       `json:"object"`
	Data   []batchError `json:"data"`
}

// batchObject is the wire form of a batch, in the field order of Azure's
// samples. Timestamps are unix seconds or null.
type batchObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Errors           *batchErrors      `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        any               `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        any               `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    requestCounts     `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"`
}

func unix(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.Unix()
	return &v
}

// object renders b; the caller holds the store lock.
func (b *batch) object(now time.Time, q Quirks) batchObject {
	o := batchObject{
		ID: b.ID, Object: "batch", Endpoint: b.Endpoint, InputFileID: b.InputFileID,
		CompletionWindow: b.CompletionWindow, Status: b.Status,
		CreatedAt: unix(b.CreatedAt), InProgressAt: unix(b.InProgressAt), ExpiresAt: unix(b.ExpiresAt),
		FinalizingAt: unix(b.FinalizingAt), CompletedAt: unix(b.CompletedAt), FailedAt: unix(b.FailedAt),
		ExpiredAt: unix(b.ExpiredAt), CancellingAt: unix(b.CancellingAt), CancelledAt: unix(b.CancelledAt),
		RequestCounts: requestCounts{Total: b.Total, Completed: b.Completed, Failed: b.Failed},
		Metadata:      b.Metadata,
	}
	if len(b.Errors) > 0 {
		o.Errors = &batchErrors{Object: "list", Data: b.Errors}
	}
	// Before OutputVisibleAt (the "completed before output_file_id appears"
	// fault) the file IDs stay null.
	if !now.Before(b.OutputVisibleAt) {
		if b.OutputFileID != "" {
			o.OutputFileID = strPtr(b.OutputFileID)
		}
		if b.ErrorFileID != "" {
			o.ErrorFileID = strPtr(b.ErrorFileID)
		}
	}
	if q.EmptyFileIDs {
		if o.OutputFileID == nil {
			o.OutputFileID = strPtr("")
		}
		if o.ErrorFileID == nil {
			o.ErrorFileID = strPtr("")
		}
	}
	if q.ISOTimestamps {
		o.CreatedAt = b.CreatedAt.UTC().Format(time.RFC3339)
		if !b.ExpiresAt.IsZero() {
			o.ExpiresAt = b.ExpiresAt.UTC().Format(time.RFC3339)
		}
	}
	if q.CapitalStatus && o.Status != "" {
		o.Status = strings.ToUpper(o.Status[:1]) + o.Status[1:]
	}
	return o
}
