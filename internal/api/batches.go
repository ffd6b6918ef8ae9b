package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// DefaultMaxBatchBody bounds a batch submission's body (inline items);
// larger corpora are referenced with input_blob instead.
const DefaultMaxBatchBody = 32 << 20

// batchesPath is where batch jobs live.
const batchesPath = "/api/v1/batches"

// tenantOnly is authed for tenants: a job belongs to a tenant, and the
// admin credential has none.
func (s *Server) tenantOnly(h handler) http.HandlerFunc {
	return s.authed(func(w http.ResponseWriter, r *http.Request, p auth.Principal) {
		if s.o.Batches == nil {
			writeError(w, http.StatusServiceUnavailable, "unavailable", "batch jobs are not configured on this deployment")
			return
		}
		if p.Admin || p.TenantID == "" {
			writeError(w, http.StatusForbidden, "forbidden", "batch jobs belong to tenants: use a tenant's credential")
			return
		}
		h(w, r, p)
	})
}

// submitRequest is the body of POST /api/v1/batches.
type submitRequest struct {
	Alias          string            `json:"alias"`
	SystemPrompt   string            `json:"system_prompt"`
	MaxTokens      int               `json:"max_tokens"`
	Metadata       map[string]string `json:"metadata"`
	IdempotencyKey string            `json:"idempotency_key"`
	Items          []batch.Item      `json:"items"`
	InputBlob      string            `json:"input_blob"`
	Urgent         bool              `json:"urgent"`
	// CompleteBy is when the answers are needed (RFC 3339).
	CompleteBy *time.Time `json:"complete_by"`
}

func (s *Server) submitBatch(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	body, err := s.readBatchBody(w, r)
	if err != nil {
		fail(w, r, err)
		return
	}
	var req submitRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		fail(w, r, jsonError(err))
		return
	}
	if _, extra := dec.Token(); extra != io.EOF {
		fail(w, r, newError(http.StatusBadRequest, "invalid_json", "unexpected data after the JSON object"))
		return
	}
	key := req.IdempotencyKey
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		if key != "" && key != h {
			fail(w, r, newError(http.StatusBadRequest, "idempotency_key_mismatch", "the Idempotency-Key header and idempotency_key differ"))
			return
		}
		key = h
	}
	sum := sha256.Sum256(body)
	t, err := s.o.Tenants.Get(r.Context(), p.TenantID)
	if err != nil {
		fail(w, r, err)
		return
	}
	job, replayed, err := s.o.Batches.Submit(r.Context(), t, batch.Request{
		Alias: req.Alias, SystemPrompt: req.SystemPrompt, MaxTokens: req.MaxTokens, Metadata: req.Metadata,
		IdempotencyKey: key, Fingerprint: hex.EncodeToString(sum[:]), Items: req.Items, InputBlob: req.InputBlob,
		Urgent:     req.Urgent,
		CompleteBy: derefTime(req.CompleteBy),
	})
	if err != nil {
		batchFail(w, r, err)
		return
	}
	w.Header().Set("Location", batchesPath+"/"+job.ID)
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusAccepted, s.viewJob(&job))
}

// readBatchBody reads a JSON body of at most MaxBatchBody bytes. A body
// announced larger is refused before any of it is read.
func (s *Server) readBatchBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tooLarge := newError(http.StatusRequestEntityTooLarge, "body_too_large",
		fmt.Sprintf("the body is limited to %d bytes; reference larger inputs with input_blob", s.o.MaxBatchBody))
	if r.ContentLength > s.o.MaxBatchBody {
		return nil, tooLarge
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, newError(http.StatusUnsupportedMediaType, "unsupported_media_type", "send application/json")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxBatchBody))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return nil, tooLarge
	case err != nil:
		return nil, newError(http.StatusBadRequest, "unreadable_body", "the body could not be read")
	case len(bytes.TrimSpace(body)) == 0:
		return nil, newError(http.StatusBadRequest, "invalid_json", "a JSON body is required")
	}
	return body, nil
}

// jsonError turns a decoding error into the API's error.
func jsonError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field") {
		return newError(http.StatusBadRequest, "unknown_field", clip(msg))
	}
	return newError(http.StatusBadRequest, "invalid_json", "the body is not valid JSON for this endpoint: "+clip(msg))
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	job, err := s.o.Batches.Get(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		batchFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.viewJob(&job))
}

func (s *Server) listBatches(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	q, err := query(r, "state", "cursor", "limit")
	if err != nil {
		fail(w, r, err)
		return
	}
	var state batch.State
	if v, ok := q["state"]; ok {
		if state, ok = batch.ParseState(v); !ok {
			fail(w, r, newError(http.StatusBadRequest, "invalid_state", fmt.Sprintf("state %q: must be one of %v", clip(v), batch.States())))
			return
		}
	}
	limit := 0
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > batch.MaxListLimit {
			fail(w, r, newError(http.StatusBadRequest, "invalid_limit", fmt.Sprintf("limit: an integer within 1..%d", batch.MaxListLimit)))
			return
		}
		limit = n
	}
	jobs, next, err := s.o.Batches.List(r.Context(), p.TenantID, state, q["cursor"], limit)
	if err != nil {
		batchFail(w, r, err)
		return
	}
	page := listView{Data: make([]jobView, len(jobs))}
	for i := range jobs {
		page.Data[i] = s.viewJob(&jobs[i])
	}
	if next != "" {
		v := url.Values{"cursor": {next}}
		if state != "" {
			v.Set("state", string(state))
		}
		if limit > 0 {
			v.Set("limit", strconv.Itoa(limit))
		}
		page.NextCursor, page.Next = next, batchesPath+"?"+v.Encode()
	}
	writeJSON(w, http.StatusOK, page)
}

type listView struct {
	Data       []jobView `json:"data"`
	NextCursor string    `json:"next_cursor,omitempty"`
	Next       string    `json:"next,omitempty"`
}

// batchResults streams the job's harvested results from platform storage.
func (s *Server) batchResults(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	body, job, complete, err := s.o.Batches.Results(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		batchFail(w, r, err)
		return
	}
	defer body.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Offpath-Results-Complete", strconv.FormatBool(complete))
	w.Header().Set("Offpath-Job-State", string(job.State))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, body); err != nil {
		// The status is sent; the truncated stream is the client's signal.
		zerolog.Ctx(r.Context()).Error().Err(err).Str("job", job.ID).Msg("results stream broken")
	}
}

func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	var none struct{}
	if err := s.decode(w, r, &none, true); err != nil {
		fail(w, r, err)
		return
	}
	job, err := s.o.Batches.Cancel(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		batchFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, s.viewJob(&job))
}

// batchFail answers the batch service's errors; the rest go to fail.
func batchFail(w http.ResponseWriter, r *http.Request, err error) {
	var inv *batch.InvalidError
	var budget *ledger.BudgetError
	switch {
	case errors.As(err, &inv) && inv.Code == "too_large":
		writeError(w, http.StatusRequestEntityTooLarge, inv.Code, inv.Message)
	case errors.As(err, &inv):
		writeError(w, http.StatusBadRequest, inv.Code, inv.Message)
	case errors.Is(err, batch.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no such batch job")
	case errors.Is(err, tenant.ErrSuspended):
		writeError(w, http.StatusForbidden, "tenant_suspended", "this tenant is suspended")
	case errors.Is(err, batch.ErrAliasNotAllowed):
		writeError(w, http.StatusForbidden, "alias_not_allowed", "this tenant may not use that model alias")
	case errors.As(err, &budget):
		writeError(w, http.StatusForbidden, "budget_exceeded", fmt.Sprintf("this job and the tenant's unfinished jobs need an estimated %d tokens; %d of the %s budget of %d are used",
			budget.Requested, budget.Used, budget.Month, budget.Budget))
	case errors.Is(err, batch.ErrKeyReused):
		writeError(w, http.StatusConflict, "idempotency_key_reused", "this idempotency key was used for a different request")
	case errors.Is(err, batch.ErrFinished):
		writeError(w, http.StatusConflict, "job_finished", "the job has ended; there is nothing to cancel")
	case errors.Is(err, batch.ErrNotReady):
		writeError(w, http.StatusConflict, "results_not_ready", "no part of the job is harvested yet; poll the job's status")
	default:
		fail(w, r, err)
	}
}
