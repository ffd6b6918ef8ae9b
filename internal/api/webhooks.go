package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/webhook"
)

// Webhooks stores tenants' webhook endpoints and their events (package
// tablestore's Webhooks).
type Webhooks interface {
	PutEndpoint(ctx context.Context, ep webhook.Endpoint) error
	Endpoint(ctx context.Context, tenantID string) (webhook.Endpoint, error)
	DeleteEndpoint(ctx context.Context, tenantID string) error
	Events(ctx context.Context, tenantID string) ([]webhook.Event, error)
}

// webhookView is a tenant's endpoint; the secret only when just made.
type webhookView struct {
	Tenant  string    `json:"tenant"`
	URL     string    `json:"url"`
	Created time.Time `json:"created"`
	Secret  string    `json:"secret,omitempty"`
}

type eventView struct {
	ID          string            `json:"id"`
	Type        string            `json:"type"`
	Job         string            `json:"job"`
	Created     time.Time         `json:"created"`
	Delivered   bool              `json:"delivered"`
	Abandoned   bool              `json:"abandoned"`
	NextAttempt *time.Time        `json:"next_attempt,omitempty"`
	Attempts    []webhook.Attempt `json:"attempts"`
}

// webhooks guards the webhook endpoints: admin only, configured, and the
// tenant exists.
func (s *Server) webhooks(h func(w http.ResponseWriter, r *http.Request, tenantID string)) http.HandlerFunc {
	return s.admin(func(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
		if s.o.Webhooks == nil {
			writeError(w, http.StatusServiceUnavailable, "unavailable", "webhooks are not configured on this deployment")
			return
		}
		if _, err := query(r); err != nil {
			fail(w, r, err)
			return
		}
		id, err := pathTenant(r)
		if err != nil {
			fail(w, r, err)
			return
		}
		if _, err := s.o.Tenants.Get(r.Context(), id); err != nil {
			fail(w, r, err)
			return
		}
		h(w, r, id)
	})
}

type putWebhookRequest struct {
	URL string `json:"url"`
}

// putWebhook registers (or replaces) the tenant's endpoint with a new
// secret, answered this once.
func (s *Server) putWebhook(w http.ResponseWriter, r *http.Request, tenantID string) {
	var req putWebhookRequest
	if err := s.decode(w, r, &req, false); err != nil {
		fail(w, r, err)
		return
	}
	ep, err := webhook.Register(tenantID, req.URL, s.o.Now(), s.o.Rand)
	if err != nil {
		fail(w, r, newError(http.StatusBadRequest, "invalid_url", err.Error()))
		return
	}
	if err := s.o.Webhooks.PutEndpoint(r.Context(), ep); err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookView{Tenant: tenantID, URL: ep.URL, Created: ep.Created, Secret: ep.Secret})
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, tenantID string) {
	ep, err := s.o.Webhooks.Endpoint(r.Context(), tenantID)
	if err != nil {
		webhookFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookView{Tenant: tenantID, URL: ep.URL, Created: ep.Created})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, tenantID string) {
	if err := s.o.Webhooks.DeleteEndpoint(r.Context(), tenantID); err != nil {
		webhookFail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// webhookEvents lists the tenant's events and every attempt at them.
func (s *Server) webhookEvents(w http.ResponseWriter, r *http.Request, tenantID string) {
	events, err := s.o.Webhooks.Events(r.Context(), tenantID)
	if err != nil {
		fail(w, r, err)
		return
	}
	out := make([]eventView, len(events))
	for i, e := range events {
		out[i] = eventView{ID: e.ID, Type: e.Type, Job: e.Job, Created: e.Created, Delivered: e.Delivered, Abandoned: e.Abandoned,
			Attempts: e.Attempts}
		if !e.Delivered && !e.Abandoned {
			next := e.NextAttempt
			out[i].NextAttempt = &next
		}
		if out[i].Attempts == nil {
			out[i].Attempts = []webhook.Attempt{}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

func webhookFail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, webhook.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "this tenant has no webhook")
		return
	}
	fail(w, r, err)
}
