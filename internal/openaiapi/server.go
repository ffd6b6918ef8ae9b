package openaiapi

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tenant"
)

// Authenticator says who is calling (package auth's Authenticator): the
// tenant's offpath key as Authorization: Bearer or api-key, or an Entra ID
// token.
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (auth.Principal, error)
}

// Tenants reads tenants (package tablestore's Tenants).
type Tenants interface {
	Get(ctx context.Context, id string) (tenant.Tenant, error)
}

// Batches runs batch jobs (package batch's Service).
type Batches interface {
	Submit(ctx context.Context, t tenant.Tenant, r batch.Request) (batch.Job, bool, error)
	Get(ctx context.Context, tenantID, id string) (batch.Job, error)
	List(ctx context.Context, tenantID string, state batch.State, cursor string, limit int) ([]batch.Job, string, error)
	Cancel(ctx context.Context, tenantID, id string) (batch.Job, error)
}

// Blobs is platform storage (package blobstore's Store).
type Blobs interface {
	Create(ctx context.Context, container, name string, metadata map[string]string) (object.Writer, error)
	Open(ctx context.Context, container, name string) (io.ReadCloser, object.Info, error)
	OpenAt(ctx context.Context, container, name string, offset int64) (io.ReadCloser, error)
	Stat(ctx context.Context, container, name string) (object.Info, error)
	Delete(ctx context.Context, container, name string) error
	List(ctx context.Context, container, prefix string) ([]string, error)
}

// Containers are the batch control plane's containers (batch.Containers):
// uploaded files go to the tenant's area of Uploads; output files are
// written next to the job's harvested copies in Results.
type Containers struct {
	Uploads, Inputs, Results string
}

// Defaults of Options.
const (
	DefaultMaxFileBytes = batch.DefaultMaxInputBytes
	DefaultMaxLines     = batch.DefaultMaxItems
	DefaultRetention    = 30 * 24 * time.Hour
	// maxCreateBody bounds a create request's JSON.
	maxCreateBody = 64 << 10
	maxQuery      = 2048
)

// Options are the door's dependencies and limits.
type Options struct {
	Auth    Authenticator
	Tenants Tenants
	Batches Batches
	Blobs   Blobs
	Catalog *catalog.Catalog
	// Containers default to the batch package's.
	Containers Containers
	// MaxFileBytes and MaxLines bound one uploaded file (default 1 GiB and
	// 1,000,000 lines: the control plane splits larger inputs than Azure's
	// 200 MB and 100,000 lines into several Azure batches).
	MaxFileBytes int64
	MaxLines     int
	// Retention is the longest output_expires_after honoured (default 30
	// days, Azure's maximum).
	Retention time.Duration
	Now       func() time.Time
	Rand      io.Reader
}

// Server is the OpenAI-compatible door, an http.Handler for the paths
// under /api/openai/.
type Server struct {
	o   Options
	mux *http.ServeMux
}

// New returns the door.
func New(o Options) *Server {
	if o.Containers.Uploads == "" {
		o.Containers.Uploads = batch.DefaultUploadsContainer
	}
	if o.Containers.Inputs == "" {
		o.Containers.Inputs = batch.DefaultInputsContainer
	}
	if o.Containers.Results == "" {
		o.Containers.Results = batch.DefaultResultsContainer
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxLines <= 0 {
		o.MaxLines = DefaultMaxLines
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	s := &Server{o: o, mux: http.NewServeMux()}
	s.routes()
	return s
}

// Prefix is the path under which the door is served: the Functions host's
// route prefix, then Azure OpenAI's own /openai.
const Prefix = "/api/openai/"

// routes registers each endpoint on both of Azure's surfaces: v1
// (/openai/v1/…) and classic (/openai/…?api-version=…).
func (s *Server) routes() {
	for _, base := range []string{"/api/openai/v1", "/api/openai"} {
		classic := !strings.HasSuffix(base, "/v1")
		h := func(m methods) http.HandlerFunc { return s.guard(classic, m) }
		s.mux.HandleFunc(base+"/files", h(methods{http.MethodGet: s.listFiles, http.MethodPost: s.uploadFile}))
		s.mux.HandleFunc(base+"/files/{id}", h(methods{http.MethodGet: s.getFile, http.MethodDelete: s.deleteFile}))
		s.mux.HandleFunc(base+"/files/{id}/content", h(methods{http.MethodGet: s.fileContent}))
		s.mux.HandleFunc(base+"/batches", h(methods{http.MethodGet: s.listBatches, http.MethodPost: s.createBatch}))
		s.mux.HandleFunc(base+"/batches/{id}", h(methods{http.MethodGet: s.getBatch}))
		s.mux.HandleFunc(base+"/batches/{id}/cancel", h(methods{http.MethodPost: s.cancelBatch}))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found",
			message: "no such endpoint: " + r.Method + " " + clip(r.URL.Path) + "; this door serves files and batches"})
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handler is an endpoint that knows its caller's tenant.
type handler func(w http.ResponseWriter, r *http.Request, t tenant.Tenant)

type methods map[string]handler

// guard checks the method (OPTIONS answers 204 with Allow, another
// method not served is 405 with Allow), the query string, authenticates the caller
// (a tenant: batches belong to tenants), and tags the logger.
func (s *Server) guard(classic bool, m methods) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h, ok := m[r.Method]
		if !ok {
			var allow []string
			for _, k := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
				if _, ok := m[k]; ok {
					allow = append(allow, k)
				}
			}
			w.Header().Set("Allow", strings.Join(append(allow, http.MethodOptions), ", "))
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
				message: clip(r.Method) + " is not allowed here; use " + strings.Join(allow, " or ")})
			return
		}
		if len(r.URL.RawQuery) > maxQuery {
			writeError(w, &apiError{status: http.StatusRequestURITooLong, code: "query_too_long", message: "the query string is too long"})
			return
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, invalidParam("the query string is malformed", ""))
			return
		}
		if classic && q.Get("api-version") == "" {
			writeError(w, &apiError{status: http.StatusNotFound, code: "404",
				message: "Resource not found: the classic surface needs an api-version query parameter (or use /openai/v1/)"})
			return
		}
		if s.o.Auth == nil || s.o.Tenants == nil || s.o.Batches == nil || s.o.Blobs == nil {
			writeError(w, &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "batch jobs are not configured on this deployment"})
			return
		}
		ctx := r.Context()
		p, err := s.o.Auth.Authenticate(ctx, r)
		switch {
		case errors.Is(err, auth.ErrUnauthenticated):
			zerolog.Ctx(ctx).Info().Str("reason", err.Error()).Msg("authentication refused")
			w.Header().Set("WWW-Authenticate", `Bearer realm="offpath"`)
			writeError(w, &apiError{status: http.StatusUnauthorized, code: "invalid_api_key",
				message: "a valid offpath API key (api-key or Authorization: Bearer) or Entra ID access token is required"})
			return
		case errors.Is(err, auth.ErrForbidden):
			writeError(w, &apiError{status: http.StatusForbidden, code: "tenant_suspended", message: "this tenant is suspended"})
			return
		case err != nil:
			fail(w, r, err)
			return
		}
		if p.Admin || p.TenantID == "" {
			writeError(w, &apiError{status: http.StatusForbidden, code: "forbidden", message: "files and batches belong to tenants: use a tenant's credential"})
			return
		}
		t, err := s.o.Tenants.Get(ctx, p.TenantID)
		if err != nil {
			fail(w, r, err)
			return
		}
		if t.State != tenant.Active {
			writeError(w, &apiError{status: http.StatusForbidden, code: "tenant_suspended", message: "this tenant is suspended"})
			return
		}
		log := zerolog.Ctx(ctx).With().Str("tenant", t.ID).Str("auth", string(p.Method)).Str("door", "openai").Logger()
		h(w, r.WithContext(log.WithContext(ctx)), t)
	}
}

// now is the door's clock in UTC.
func (s *Server) now() time.Time { return s.o.Now().UTC() }
