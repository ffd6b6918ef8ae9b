package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/tenant"
)

// KeyView is one of a tenant's API keys as shown: its id and dates.
type KeyView struct {
	ID      string     `json:"id"`
	Created time.Time  `json:"created"`
	Expires *time.Time `json:"expires,omitempty"`
}

// TenantView is a tenant as the API's admin routes and the CLI's -json
// output show it: never a key's hash or salt.
type TenantView struct {
	ID                 string       `json:"id"`
	DisplayName        string       `json:"display_name"`
	Aliases            []string     `json:"aliases"`
	MonthlyTokenBudget int64        `json:"monthly_token_budget"`
	DataZone           string       `json:"data_zone,omitempty"`
	State              tenant.State `json:"state"`
	AppIDs             []string     `json:"app_ids"`
	Keys               []KeyView    `json:"keys"`
	Created            time.Time    `json:"created"`
	Updated            time.Time    `json:"updated"`
}

// ViewTenant is t as a TenantView: empty lists as [], not null.
func ViewTenant(t tenant.Tenant) TenantView {
	v := TenantView{ID: t.ID, DisplayName: t.DisplayName, Aliases: t.Aliases, MonthlyTokenBudget: t.MonthlyTokenBudget,
		DataZone: t.DataZone, State: t.State, AppIDs: t.AppIDs, Keys: []KeyView{}, Created: t.Created, Updated: t.Updated}
	if v.Aliases == nil {
		v.Aliases = []string{}
	}
	if v.AppIDs == nil {
		v.AppIDs = []string{}
	}
	for _, k := range t.Keys {
		kv := KeyView{ID: k.ID, Created: k.Created}
		if !k.Expires.IsZero() {
			exp := k.Expires
			kv.Expires = &exp
		}
		v.Keys = append(v.Keys, kv)
	}
	return v
}

// newKeyView is the answer that carries a new API key: the only time it is
// ever shown.
type newKeyView struct {
	Tenant TenantView `json:"tenant"`
	APIKey string     `json:"api_key"`
	KeyID  string     `json:"key_id"`
}

type createTenantRequest struct {
	ID                 string   `json:"id"`
	DisplayName        string   `json:"display_name"`
	Aliases            []string `json:"aliases"`
	MonthlyTokenBudget int64    `json:"monthly_token_budget"`
	DataZone           string   `json:"data_zone"`
	AppIDs             []string `json:"app_ids"`
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	var req createTenantRequest
	if err := s.decode(w, r, &req, false); err != nil {
		fail(w, r, err)
		return
	}
	if err := s.knownAliases(req.Aliases); err != nil {
		fail(w, r, err)
		return
	}
	now := s.o.Now()
	t := tenant.New(req.ID, req.DisplayName, now)
	t.Aliases, t.MonthlyTokenBudget, t.AppIDs, t.DataZone = req.Aliases, req.MonthlyTokenBudget, req.AppIDs, req.DataZone
	plain, k, err := t.RotateKey(s.o.Rand, now, 0)
	if err != nil {
		fail(w, r, err)
		return
	}
	if err := s.o.Tenants.Create(r.Context(), t); err != nil {
		fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/tenants/"+t.ID)
	writeJSON(w, http.StatusCreated, newKeyView{Tenant: ViewTenant(t), APIKey: plain, KeyID: k.ID})
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	list, err := s.o.Tenants.List(r.Context())
	if err != nil {
		fail(w, r, err)
		return
	}
	out := make([]TenantView, 0, len(list))
	for _, t := range list {
		out = append(out, ViewTenant(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tenants": out})
}

// pathTenant returns the {id} path value, validated.
func pathTenant(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := tenant.ValidateID(id); err != nil {
		return "", newError(http.StatusBadRequest, "invalid_tenant_id", err.Error())
	}
	if _, err := query(r); err != nil {
		return "", err
	}
	return id, nil
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	id, err := pathTenant(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	t, err := s.o.Tenants.Get(r.Context(), id)
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ViewTenant(t))
}

// patchTenantRequest changes what it names; absent fields stay as they are.
type patchTenantRequest struct {
	DisplayName        *string       `json:"display_name"`
	Aliases            *[]string     `json:"aliases"`
	MonthlyTokenBudget *int64        `json:"monthly_token_budget"`
	DataZone           *string       `json:"data_zone"`
	State              *tenant.State `json:"state"`
	AppIDs             *[]string     `json:"app_ids"`
}

func (s *Server) patchTenant(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	id, err := pathTenant(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	var req patchTenantRequest
	if err := s.decode(w, r, &req, false); err != nil {
		fail(w, r, err)
		return
	}
	if req.Aliases != nil {
		if err := s.knownAliases(*req.Aliases); err != nil {
			fail(w, r, err)
			return
		}
	}
	if req.State != nil {
		if _, err := tenant.ParseState(string(*req.State)); err != nil {
			fail(w, r, err)
			return
		}
	}
	now := s.o.Now()
	t, err := s.o.Tenants.Update(r.Context(), id, func(t *tenant.Tenant) error {
		if req.DisplayName != nil {
			t.DisplayName = *req.DisplayName
		}
		if req.Aliases != nil {
			t.Aliases = *req.Aliases
		}
		if req.MonthlyTokenBudget != nil {
			t.MonthlyTokenBudget = *req.MonthlyTokenBudget
		}
		if req.DataZone != nil {
			t.DataZone = *req.DataZone
		}
		if req.State != nil {
			t.State = *req.State
		}
		if req.AppIDs != nil {
			t.AppIDs = *req.AppIDs
		}
		t.Updated = now.UTC()
		return nil
	})
	if err != nil {
		fail(w, r, err)
		return
	}
	s.o.Auth.Forget()
	writeJSON(w, http.StatusOK, ViewTenant(t))
}

type rotateKeyRequest struct {
	// Overlap is how long the tenant's other keys keep working, as a Go
	// duration ("24h", "90m", "0s" to revoke them at once). Default 24h.
	Overlap *string `json:"overlap"`
}

// MaxOverlap bounds a rotation's overlap.
const MaxOverlap = 30 * 24 * time.Hour

func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	id, err := pathTenant(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	var req rotateKeyRequest
	if err := s.decode(w, r, &req, true); err != nil {
		fail(w, r, err)
		return
	}
	overlap := tenant.DefaultOverlap
	if req.Overlap != nil {
		if overlap, err = time.ParseDuration(*req.Overlap); err != nil || overlap < 0 || overlap > MaxOverlap {
			fail(w, r, newError(http.StatusBadRequest, "invalid", fmt.Sprintf("overlap: must be a duration from 0s to %v, e.g. \"24h\"", MaxOverlap)))
			return
		}
	}
	var plain string
	var k tenant.Key
	t, err := s.o.Tenants.Update(r.Context(), id, func(t *tenant.Tenant) error {
		var err error
		plain, k, err = t.RotateKey(s.o.Rand, s.o.Now(), overlap)
		return err
	})
	if err != nil {
		fail(w, r, err)
		return
	}
	s.o.Auth.Forget()
	writeJSON(w, http.StatusCreated, newKeyView{Tenant: ViewTenant(t), APIKey: plain, KeyID: k.ID})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	id, err := pathTenant(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	keyID := r.PathValue("key")
	if !tenant.IsKeyID(keyID) {
		fail(w, r, newError(http.StatusNotFound, "not_found", "no such key"))
		return
	}
	t, err := s.o.Tenants.Update(r.Context(), id, func(t *tenant.Tenant) error { return t.RevokeKey(keyID, s.o.Now()) })
	if err != nil {
		fail(w, r, err)
		return
	}
	s.o.Auth.Forget()
	writeJSON(w, http.StatusOK, ViewTenant(t))
}

// knownAliases checks aliases against the catalog.
func (s *Server) knownAliases(aliases []string) error {
	if s.o.Catalog == nil {
		return nil
	}
	for i, a := range aliases {
		if _, ok := s.o.Catalog.Alias(a); !ok {
			return newError(http.StatusBadRequest, "unknown_alias", fmt.Sprintf("aliases[%d] %q is not in the model catalog (known: %v)", i, clip(a), s.o.Catalog.Names()))
		}
	}
	return nil
}
