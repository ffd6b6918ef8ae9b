package aoaisim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type batchCreateRequest struct {
	InputFileID        string            `json:"input_file_id"`
	Endpoint           string            `json:"endpoint"`
	CompletionWindow   string            `json:"completion_window"`
	Metadata           map[string]string `json:"metadata"`
	OutputExpiresAfter *struct {
		Seconds int64  `json:"seconds"`
		Anchor  string `json:"anchor"`
	} `json:"output_expires_after"`
}

// normaliseRoute strips the "/v1" prefix: Azure reads "/v1/chat/completions"
// and "/chat/completions" as the same route.
func normaliseRoute(u string) string {
	return strings.TrimPrefix(u, "/v1")
}

func errBatchNotFound(id string) *apiError {
	e := newAPIError(http.StatusNotFound, "404", fmt.Sprintf("Batch not found: %s.", id))
	e.Param, e.Type = strPtr("batch_id"), strPtr("invalid_request_error")
	return e
}

// validateCreate checks the create body and returns the output expiry.
func (s *Server) validateCreate(req *batchCreateRequest) (time.Duration, *apiError) {
	switch {
	case req.InputFileID == "":
		return 0, invalidRequest("input_file_id", "'input_file_id' is a required property.")
	case req.CompletionWindow != "24h":
		return 0, invalidRequest("completion_window", fmt.Sprintf("'%s' is not a supported completion_window; only '24h' is supported.", req.CompletionWindow))
	case normaliseRoute(req.Endpoint) != "/chat/completions" && normaliseRoute(req.Endpoint) != "/responses":
		return 0, invalidRequest("endpoint", fmt.Sprintf("'%s' is not a supported endpoint; the simulator runs '/chat/completions' and '/responses' batches (embeddings are not supported on Azure batch).", req.Endpoint))
	case len(req.Metadata) > 16:
		return 0, invalidRequest("metadata", "metadata can have at most 16 key-value pairs.")
	}
	for k, v := range req.Metadata {
		if len(k) > 64 || len(v) > 512 {
			return 0, invalidRequest("metadata", "metadata keys are limited to 64 characters and values to 512 characters.")
		}
	}
	expiry := s.cfg.Batch.DefaultOutputExpiry.D()
	if oe := req.OutputExpiresAfter; oe != nil {
		if oe.Anchor != "" && oe.Anchor != "created_at" {
			return 0, invalidRequest("output_expires_after.anchor", fmt.Sprintf("'%s' is not a valid anchor; use 'created_at'.", oe.Anchor))
		}
		minS, maxS := int64(s.cfg.Batch.MinOutputExpiry.D()/time.Second), int64(s.cfg.Batch.MaxOutputExpiry.D()/time.Second)
		if oe.Seconds < minS || oe.Seconds > maxS {
			return 0, invalidRequest("output_expires_after.seconds", fmt.Sprintf("output_expires_after.seconds must be between %d and %d.", minS, maxS))
		}
		expiry = time.Duration(oe.Seconds) * time.Second
	}
	return expiry, nil
}

// handleBatchCreate serves POST .../batches. The job starts in validating;
// on a fail-fast deployment a job that does not fit the enqueued-token quota
// is refused here with HTTP 400 token_limit_exceeded.
func (s *Server) handleBatchCreate(sf surface) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteBatchesCreate)
		var req batchCreateRequest
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil {
			writeError(w, invalidRequest("", fmt.Sprintf("We could not parse the JSON body of your request: %v", err)))
			return
		}
		expiry, apiErr := s.validateCreate(&req)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		now := s.clock.Now()
		file, ok := s.files.get(req.InputFileID, now)
		switch {
		case !ok:
			writeError(w, errFileNotFound(req.InputFileID))
			return
		case file.Purpose != purposeBatch:
			writeError(w, invalidRequest("input_file_id", fmt.Sprintf("File %s has purpose '%s'; batch input files need purpose 'batch'.", file.ID, file.Purpose)))
			return
		case now.Before(file.ReadyAt):
			writeError(w, invalidRequest("input_file_id", fmt.Sprintf("File %s is still pending; wait until its status is 'processed'.", file.ID)))
			return
		}
		b := &batch{
			ID: newBatchID(), Endpoint: req.Endpoint, InputFileID: file.ID, CompletionWindow: req.CompletionWindow,
			Deployment: peekDeployment(file.path), Metadata: req.Metadata, OutputExpiry: expiry,
			EstimatedTokens: EnqueuedTokens(file.Bytes), wake: make(chan struct{}, 1),
			Status: statusValidating, CreatedAt: now, ExpiresAt: now.Add(s.cfg.Batch.CompletionWindow.D()),
		}
		if s.inject(r.Context(), w, RouteBatchesCreate, b.Deployment) {
			return
		}
		dep := s.deps[b.Deployment]
		if sf.classic || !s.cfg.Quirks.NoEnqueuedHeaderOnV1 {
			w.Header().Set("deployment-enqueued-tokens", strconv.FormatInt(b.EstimatedTokens, 10))
			if dep != nil && dep.cfg.EnqueuedTokenQuota > 0 {
				w.Header().Set("deployment-maximum-enqueued-tokens", strconv.FormatInt(dep.cfg.EnqueuedTokenQuota, 10))
			}
		}
		if dep != nil && dep.cfg.Type == TypeGlobalBatch && dep.cfg.QuotaBehaviour == QuotaFailFast {
			if inUse, ok := s.reserve(dep, b.EstimatedTokens); !ok {
				writeError(w, errTokenLimit(dep, b.EstimatedTokens, inUse))
				return
			}
			b.Reserved = b.EstimatedTokens
		}
		b.ticket = s.gate.ticket()
		s.batches.add(b)
		s.log.Info().Str("batch_id", b.ID).Str("deployment", b.Deployment).Int64("enqueued_tokens", b.EstimatedTokens).Msg("batch created")
		s.workers.Add(1)
		go s.runBatch(b)
		obj, _, _ := s.batches.snapshot(b.ID, now, s.cfg.Quirks)
		if s.injectReply(r.Context(), w, RouteBatchesCreate, b.Deployment) {
			return
		}
		status := http.StatusOK
		if sf.classic {
			status = http.StatusCreated // the classic API documents 201
		}
		writeJSON(w, status, obj)
	}
}

// handleBatchGet serves GET .../batches/{id}.
func (s *Server) handleBatchGet() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteBatchesGet)
		id := r.PathValue("id")
		obj, b, ok := s.batches.snapshot(id, s.clock.Now(), s.cfg.Quirks)
		if !ok {
			writeError(w, errBatchNotFound(id))
			return
		}
		if s.inject(r.Context(), w, RouteBatchesGet, b.Deployment) {
			return
		}
		writeJSON(w, http.StatusOK, obj)
	}
}

// handleBatchList serves GET .../batches?limit=&after=, newest first.
func (s *Server) handleBatchList() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteBatchesList)
		if s.inject(r.Context(), w, RouteBatchesList, "") {
			return
		}
		limit, after, apiErr := pageQuery(r, 20, 100)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		writeJSON(w, http.StatusOK, s.batches.page(after, limit, s.clock.Now(), s.cfg.Quirks))
	}
}

// handleBatchCancel serves POST .../batches/{id}/cancel. A validating or
// in-progress job moves to cancelling; cancelling again is harmless; a job in
// finalizing or a terminal state cannot be cancelled (409).
func (s *Server) handleBatchCancel() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteBatchesCancel)
		id := r.PathValue("id")
		_, b, ok := s.batches.snapshot(id, s.clock.Now(), s.cfg.Quirks)
		if !ok {
			writeError(w, errBatchNotFound(id))
			return
		}
		if s.inject(r.Context(), w, RouteBatchesCancel, b.Deployment) {
			return
		}
		now := s.clock.Now()
		var conflict string
		s.batches.update(b, func(b *batch) {
			switch b.Status {
			case statusValidating, statusInProgress:
				b.Status, b.CancellingAt = statusCancelling, now
			case statusCancelling, statusCancelled:
			default:
				conflict = b.Status
			}
		})
		if conflict != "" {
			e := newAPIError(http.StatusConflict, "invalid_request", fmt.Sprintf("Cannot cancel a batch with status '%s'.", conflict))
			e.Type = strPtr("invalid_request_error")
			writeError(w, e)
			return
		}
		select {
		case b.wake <- struct{}{}:
		default:
		}
		s.log.Info().Str("batch_id", b.ID).Msg("batch cancelling")
		obj, _, _ := s.batches.snapshot(id, now, s.cfg.Quirks)
		if s.injectReply(r.Context(), w, RouteBatchesCancel, b.Deployment) {
			return
		}
		writeJSON(w, http.StatusOK, obj)
	}
}
