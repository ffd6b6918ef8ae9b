package openaiapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/tenant"
)

// createRequest is the body of POST /batches.
type createRequest struct {
	InputFileID        string            `json:"input_file_id"`
	Endpoint           string            `json:"endpoint"`
	CompletionWindow   string            `json:"completion_window"`
	Metadata           map[string]string `json:"metadata"`
	OutputExpiresAfter *struct {
		Anchor  string `json:"anchor"`
		Seconds int64  `json:"seconds"`
	} `json:"output_expires_after"`
}

// reservedMetadataKey holds offpath's own view of the job in a batch's
// metadata; a caller may not set it.
const reservedMetadataKey = "offpath"

// Metadata keys the door reads as scheduling requests (kept in the
// batch's metadata like any other).
const (
	// metaCompleteBy is when the answers are needed, RFC 3339: the
	// native API's complete_by, with its bounds.
	metaCompleteBy = "complete_by"
	// metaUrgent "true" keeps a small batch out of shared packs: it is
	// submitted on its own as soon as quota allows.
	metaUrgent = "urgent"
)

// scheduling reads the batch's deadline and packing opt-out from its
// metadata. The deadline's bounds are the control plane's (Submit checks
// them against its clock).
func scheduling(md map[string]string) (time.Time, bool, error) {
	var by time.Time
	if v, ok := md[metaCompleteBy]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return time.Time{}, false, invalidParam(fmt.Sprintf("metadata.%s: an RFC 3339 time, such as 2026-03-14T06:00:00Z", metaCompleteBy), "metadata")
		}
		by = t
	}
	var urgent bool
	switch v, ok := md[metaUrgent]; {
	case !ok || v == "false":
	case v == "true":
		urgent = true
	default:
		return time.Time{}, false, invalidParam(fmt.Sprintf("metadata.%s: true or false", metaUrgent), "metadata")
	}
	return by, urgent, nil
}

// Attributes the door records with its jobs.
const (
	attrInputFile    = "openai_input_file_id"
	attrEndpoint     = "openai_endpoint"
	attrOutputExpiry = "openai_output_expires_after"
)

func (s *Server) createBatch(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	ctx := r.Context()
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCreateBody))
	if err != nil {
		fail(w, r, &apiError{status: http.StatusRequestEntityTooLarge, code: "invalid_request", message: fmt.Sprintf("the body is limited to %d bytes", maxCreateBody)})
		return
	}
	var req createRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		msg := "the body is not a JSON batch request"
		if err != nil {
			msg += ": " + clip(strings.TrimPrefix(err.Error(), "json: "))
		}
		fail(w, r, invalidParam(msg, ""))
		return
	}
	switch {
	case req.InputFileID == "":
		fail(w, r, invalidParam("input_file_id is required", "input_file_id"))
		return
	case !chatURLs[req.Endpoint]:
		fail(w, r, invalidParam(fmt.Sprintf("endpoint %q: the door runs /v1/chat/completions (or /chat/completions)", clip(req.Endpoint)), "endpoint"))
		return
	case req.CompletionWindow != "24h":
		fail(w, r, invalidParam("completion_window: 24h", "completion_window"))
		return
	}
	if _, ok := req.Metadata[reservedMetadataKey]; ok {
		fail(w, r, invalidParam(fmt.Sprintf("metadata: the key %q is reserved for offpath", reservedMetadataKey), "metadata"))
		return
	}
	completeBy, urgent, err := scheduling(req.Metadata)
	if err != nil {
		fail(w, r, err)
		return
	}
	attrs := map[string]string{attrInputFile: req.InputFileID, attrEndpoint: req.Endpoint}
	if e := req.OutputExpiresAfter; e != nil {
		if (e.Anchor != "" && e.Anchor != "created_at") || e.Seconds < minFileExpiry || e.Seconds > maxFileExpiry {
			fail(w, r, invalidParam(fmt.Sprintf("output_expires_after: anchor created_at and seconds within %d..%d", minFileExpiry, maxFileExpiry), "output_expires_after"))
			return
		}
		attrs[attrOutputExpiry] = strconv.FormatInt(min(e.Seconds, int64(s.o.Retention.Seconds())), 10)
	}
	rec, err := s.record(ctx, t.ID, req.InputFileID)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.status == http.StatusNotFound {
			err = invalidParam(fmt.Sprintf("no such file %q", clip(req.InputFileID)), "input_file_id")
		}
		fail(w, r, err)
		return
	}
	if normalURL(rec.URL) != normalURL(req.Endpoint) {
		fail(w, r, &apiError{status: http.StatusBadRequest, code: "url_mismatch", param: "endpoint",
			message: fmt.Sprintf("the file's lines name %s, the batch %s", rec.URL, req.Endpoint)})
		return
	}
	// A retried create must not make a second job: the Idempotency-Key
	// header when the client sends one, else the input file (one batch per
	// uploaded file; the same parameters return the batch it made).
	key := "openai-file:" + req.InputFileID
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		key = "openai:" + h
	}
	canon, err := json.Marshal(req) // map keys sorted: a stable fingerprint
	if err != nil {
		fail(w, r, err)
		return
	}
	sum := sha256.Sum256(canon)
	job, _, err := s.o.Batches.Submit(ctx, t, batch.Request{
		Alias: rec.Model, Metadata: req.Metadata, IdempotencyKey: key, Fingerprint: hex.EncodeToString(sum[:]),
		InputBlob: fileBlob(t.ID, rec.ID, "items.jsonl"), Attributes: attrs, CompleteBy: completeBy, Urgent: urgent,
	})
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.view(&job))
}

// jobID is the offpath job of a batch id, or "".
func jobID(batchID string) string {
	id, ok := strings.CutPrefix(batchID, batchIDPrefix)
	if !ok || !batch.ValidJobID(id) {
		return ""
	}
	return id
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	s.onBatch(w, r, t, s.o.Batches.Get)
}

func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	s.onBatch(w, r, t, s.o.Batches.Cancel)
}

// onBatch answers with the batch the path names after do, a read or a
// change of the tenant's job; a batch id that is no job of offpath's is
// not found.
func (s *Server) onBatch(w http.ResponseWriter, r *http.Request, t tenant.Tenant, do func(ctx context.Context, tenantID, id string) (batch.Job, error)) {
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	id := jobID(r.PathValue("id"))
	if id == "" {
		fail(w, r, notFound("batch"))
		return
	}
	job, err := do(r.Context(), t.ID, id)
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.view(&job))
}

// Limits of the batches list (OpenAI's).
const (
	defaultBatchListLimit = 20
	maxBatchListLimit     = 100
)

// listBatches lists the tenant's batches, newest first, after a batch id:
// every job of the tenant, whichever door submitted it.
func (s *Server) listBatches(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	q, err := query(r, "limit", "after")
	if err != nil {
		fail(w, r, err)
		return
	}
	limit, err := limitParam(q, defaultBatchListLimit, maxBatchListLimit)
	if err != nil {
		fail(w, r, err)
		return
	}
	cursor := ""
	if a := q.Get("after"); a != "" {
		if cursor = jobID(a); cursor == "" {
			fail(w, r, invalidParam("after: a batch id from this list", "after"))
			return
		}
	}
	jobs, next, err := s.o.Batches.List(r.Context(), t.ID, "", cursor, limit)
	if err != nil {
		fail(w, r, err)
		return
	}
	page := listPage[batchObject]{Object: "list", Data: make([]batchObject, len(jobs)), HasMore: next != ""}
	for i := range jobs {
		page.Data[i] = s.view(&jobs[i])
	}
	page.setEnds(func(b batchObject) string { return b.ID })
	writeJSON(w, http.StatusOK, page)
}
