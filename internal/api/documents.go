package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/tenant"
)

// Documents reads the queue path's document statuses (package tablestore's
// Documents).
type Documents interface {
	Get(ctx context.Context, partition, name string) (document.Status, error)
	Page(ctx context.Context, partition string, state document.State, cursor string, limit int) ([]document.Status, string, error)
}

// Reprocessor puts a dead-lettered document back on the queue path
// (package ingest's Enqueuer).
type Reprocessor interface {
	Reprocess(ctx context.Context, partition, name string) (document.Status, error)
}

// Paths and page sizes of the document endpoints. A document's name holds
// slashes (its tenant folder and path), so it travels as ?name=, never as a
// path segment.
const (
	documentsPath      = "/api/v1/documents"
	adminDocumentsPath = "/api/v1/admin/documents"
	statusSuffix       = "/status"
	defaultDocPage     = 50
	maxDocPage         = 500
)

// documentRoutes registers the document endpoints.
func (s *Server) documentRoutes() {
	s.mux.HandleFunc(documentsPath, methods{http.MethodGet: s.tenantDocs(s.listDocuments)}.serve)
	s.mux.HandleFunc(documentsPath+statusSuffix, methods{http.MethodGet: s.tenantDocs(s.getDocument)}.serve)
	s.mux.HandleFunc(adminDocumentsPath, methods{http.MethodGet: s.adminDocs(s.listDocuments)}.serve)
	s.mux.HandleFunc(adminDocumentsPath+statusSuffix, methods{http.MethodGet: s.adminDocs(s.getDocument)}.serve)
	s.mux.HandleFunc(adminDocumentsPath+"/reprocess", methods{http.MethodPost: s.adminDocs(s.reprocessDocument)}.serve)
}

// tenantDocs is authed for tenants: the routes show the caller's own
// documents; the admin credential has the admin routes.
func (s *Server) tenantDocs(h handler) http.HandlerFunc {
	return s.authed(func(w http.ResponseWriter, r *http.Request, p auth.Principal) {
		switch {
		case s.o.Documents == nil:
			writeError(w, http.StatusServiceUnavailable, "unavailable", "document statuses are not configured on this deployment")
		case p.Admin || p.TenantID == "":
			writeError(w, http.StatusForbidden, "forbidden", "these are a tenant's documents: use a tenant's credential, or "+adminDocumentsPath)
		default:
			h(w, r, p)
		}
	})
}

// adminDocs is admin for the document routes.
func (s *Server) adminDocs(h handler) http.HandlerFunc {
	return s.admin(func(w http.ResponseWriter, r *http.Request, p auth.Principal) {
		if s.o.Documents == nil {
			writeError(w, http.StatusServiceUnavailable, "unavailable", "document statuses are not configured on this deployment")
			return
		}
		h(w, r, p)
	})
}

// docListView is a page of statuses.
type docListView struct {
	Data       []documentView `json:"data"`
	NextCursor string         `json:"next_cursor,omitempty"`
	Next       string         `json:"next,omitempty"`
}

// listDocuments answers a page of statuses: the caller's, or for the admin
// every tenant's (or ?tenant=, "_unattributed" included).
func (s *Server) listDocuments(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	allowed := []string{"state", "cursor", "limit"}
	base := documentsPath
	if p.Admin {
		allowed, base = append(allowed, "tenant"), adminDocumentsPath
	}
	q, err := query(r, allowed...)
	if err != nil {
		fail(w, r, err)
		return
	}
	partition := p.TenantID
	if p.Admin {
		partition = q["tenant"]
		if err := checkPartition(partition); partition != "" && err != nil {
			fail(w, r, err)
			return
		}
	}
	var state document.State
	if v, ok := q["state"]; ok {
		if state, err = document.ParseState(v); err != nil {
			fail(w, r, newError(http.StatusBadRequest, "invalid_state", err.Error()))
			return
		}
	}
	limit := defaultDocPage
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDocPage {
			fail(w, r, newError(http.StatusBadRequest, "invalid_limit", fmt.Sprintf("limit: an integer within 1..%d", maxDocPage)))
			return
		}
		limit = n
	}
	list, next, err := s.o.Documents.Page(r.Context(), partition, state, q["cursor"], limit)
	if errors.Is(err, document.ErrBadCursor) {
		fail(w, r, newError(http.StatusBadRequest, "invalid_cursor", "cursor: not one a listing of these documents made"))
		return
	}
	if err != nil {
		fail(w, r, err)
		return
	}
	page := docListView{Data: viewDocuments(list)}
	if next != "" {
		v := url.Values{"cursor": {next}}
		for _, k := range []string{"state", "limit", "tenant"} {
			if q[k] != "" {
				v.Set(k, q[k])
			}
		}
		page.NextCursor, page.Next = next, base+"?"+v.Encode()
	}
	writeJSON(w, http.StatusOK, page)
}

// getDocument answers one status by ?name=, the document's name with its
// tenant folder ("contoso/kb/a.md", as listed). A tenant's view of another
// tenant's document is the same 404 as a document nobody dropped; the
// admin reads any (?tenant=_unattributed for what named no tenant).
func (s *Server) getDocument(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	allowed := []string{"name"}
	if p.Admin {
		allowed = append(allowed, "tenant")
	}
	q, err := query(r, allowed...)
	if err != nil {
		fail(w, r, err)
		return
	}
	if q["name"] == "" {
		fail(w, r, errNameRequired)
		return
	}
	partition, name, err := documentName(q["name"], q["tenant"])
	if err != nil {
		fail(w, r, err)
		return
	}
	if !p.Admin && partition != p.TenantID {
		fail(w, r, notFoundDocument(name))
		return
	}
	st, err := s.o.Documents.Get(r.Context(), partition, name)
	if errors.Is(err, document.ErrNotFound) {
		err = notFoundDocument(name)
	}
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewDocument(st))
}

// reprocessRequest is the body of POST /api/v1/admin/documents/reprocess.
type reprocessRequest struct {
	// Name is the document's name, tenant folder included, as listed.
	Name string `json:"name"`
	// Tenant, if given, must be the name's first segment.
	Tenant string `json:"tenant"`
}

// reprocessDocument puts a dead-lettered document back on the queue path:
// 202 with its status, queued for the new version.
func (s *Server) reprocessDocument(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if s.o.Reprocessor == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the queue path is not configured on this deployment")
		return
	}
	var req reprocessRequest
	if err := s.decode(w, r, &req, false); err != nil {
		fail(w, r, err)
		return
	}
	if req.Name == "" {
		fail(w, r, errNameRequired)
		return
	}
	partition, name, err := documentName(req.Name, "")
	if err != nil {
		fail(w, r, err)
		return
	}
	if req.Tenant != "" && req.Tenant != partition {
		fail(w, r, newError(http.StatusBadRequest, "invalid_tenant", fmt.Sprintf("tenant %q is not the name's tenant folder %q", clip(req.Tenant), partition)))
		return
	}
	st, err := s.o.Reprocessor.Reprocess(r.Context(), partition, name)
	switch {
	case errors.Is(err, document.ErrNotFound):
		fail(w, r, notFoundDocument(name))
	case errors.Is(err, document.ErrNotDeadLettered):
		fail(w, r, newError(http.StatusConflict, "not_dead_lettered", fmt.Sprintf("%s is %s: only a dead-lettered document is reprocessed", clip(name), st.State)))
	case errors.Is(err, document.ErrChanged):
		fail(w, r, newError(http.StatusConflict, "document_changed", clip(name)+": the dead-lettered version has been replaced or deleted since"))
	case err != nil:
		fail(w, r, err)
	default:
		w.Header().Set("Location", statusURL(adminDocumentsPath, name))
		writeJSON(w, http.StatusAccepted, viewDocument(st))
	}
}

// documentName checks a document's name and finds its partition: the
// tenant folder (its first segment), or partition when given (the
// admin's ?tenant=, which may be "_unattributed").
func documentName(name, partition string) (string, string, error) {
	if err := claimcheck.CheckName(name); err != nil {
		return "", "", newError(http.StatusBadRequest, "invalid_name", "name: "+clip(err.Error()))
	}
	if partition != "" {
		return partition, name, checkPartition(partition)
	}
	tenantID, _, err := claimcheck.SplitTenant(name)
	if err != nil {
		return "", "", newError(http.StatusBadRequest, "invalid_name", "name: want TENANT/PATH, the blob's name in the incoming container")
	}
	return tenantID, name, nil
}

// checkPartition validates a tenant id or "_unattributed".
func checkPartition(p string) error {
	if p == document.Unattributed {
		return nil
	}
	if err := tenant.ValidateID(p); err != nil {
		return newError(http.StatusBadRequest, "invalid_tenant", clip(err.Error()))
	}
	return nil
}

func notFoundDocument(name string) error {
	return newError(http.StatusNotFound, "not_found", "no document "+clip(name))
}

var errNameRequired = newError(http.StatusBadRequest, "invalid_name", "name: the document's name, tenant folder included, is required")

// statusURL is the path and query of one document's status under base.
func statusURL(base, name string) string {
	return base + statusSuffix + "?" + url.Values{"name": {name}}.Encode()
}
