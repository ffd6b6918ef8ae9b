package tablestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/tenant"
)

const (
	tenantsPartition = "tenants"
	tenantPrefix     = "t:"
	keyPrefix        = "k:"
	appPrefix        = "a:"
	// epochRow is rewritten by every transaction that changes a tenant, so
	// its ETag is the credential epoch (see CredentialEpoch).
	epochRow = "e:credentials"
	// updateAttempts bounds the optimistic-concurrency retries of Update.
	updateAttempts = 5
)

// Tenants stores tenants and their credential index.
type Tenants struct {
	t table
}

// NewTenants returns the tenant store on the named table (empty:
// DefaultTenantsTable).
func NewTenants(svc *aztables.ServiceClient, tableName string) *Tenants {
	return &Tenants{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultTenantsTable))}}
}

// Create stores a new tenant with its keys and application ids, atomically.
// It returns tenant.ErrConflict if the tenant exists or one of its
// application ids belongs to another tenant.
func (s *Tenants) Create(ctx context.Context, t tenant.Tenant) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if err := s.t.ensure(ctx); err != nil {
		return err
	}
	row, err := tenantRow(t)
	if err != nil {
		return err
	}
	actions := []aztables.TransactionAction{{ActionType: aztables.TransactionTypeAdd, Entity: row}, epochAction(t)}
	idx, err := indexActions(nil, &t)
	if err != nil {
		return err
	}
	actions = append(actions, idx...)
	if _, err := s.t.client.SubmitTransaction(ctx, actions, nil); err != nil {
		if !isTransactionFailure(err) {
			return fmt.Errorf("create tenant %s: %w", t.ID, err)
		}
		if _, _, gerr := s.get(ctx, t.ID); gerr == nil {
			return fmt.Errorf("tenant %s: %w: it exists already", t.ID, tenant.ErrConflict)
		}
		if err := s.appsFree(ctx, t.ID, t.AppIDs); err != nil {
			return err
		}
		return fmt.Errorf("create tenant %s: %w", t.ID, err)
	}
	return nil
}

// Get returns the tenant with the given id, or tenant.ErrNotFound.
func (s *Tenants) Get(ctx context.Context, id string) (tenant.Tenant, error) {
	t, _, err := s.get(ctx, id)
	return t, err
}

func (s *Tenants) get(ctx context.Context, id string) (tenant.Tenant, azcore.ETag, error) {
	if !tenant.ValidName(id) {
		return tenant.Tenant{}, "", fmt.Errorf("tenant %q: %w", id, tenant.ErrNotFound)
	}
	res, err := s.t.client.GetEntity(ctx, tenantsPartition, tenantPrefix+id, nil)
	if err != nil {
		if isNotFound(err) {
			return tenant.Tenant{}, "", fmt.Errorf("tenant %s: %w", id, tenant.ErrNotFound)
		}
		return tenant.Tenant{}, "", fmt.Errorf("read tenant %s: %w", id, err)
	}
	t, err := decodeTenant(res.Value)
	if err != nil {
		return tenant.Tenant{}, "", fmt.Errorf("tenant %s: %w", id, err)
	}
	return t, res.ETag, nil
}

// List returns every tenant, sorted by id.
func (s *Tenants) List(ctx context.Context) ([]tenant.Tenant, error) {
	filter := fmt.Sprintf("PartitionKey eq %s and RowKey ge %s and RowKey lt %s", quote(tenantsPartition), quote(tenantPrefix), quote("t;"))
	var out []tenant.Tenant
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter}) {
		if err != nil {
			return nil, fmt.Errorf("list tenants: %w", err)
		}
		t, err := decodeTenant(b)
		if err != nil {
			return nil, fmt.Errorf("list tenants: %w", err)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b tenant.Tenant) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Update reads the tenant, applies change to it and writes it back with its
// credential index in one transaction, guarded by the tenant's ETag; a
// concurrent change makes it start over (up to a few times, then
// tenant.ErrConflict). change may return an error to abandon the update.
func (s *Tenants) Update(ctx context.Context, id string, change func(*tenant.Tenant) error) (tenant.Tenant, error) {
	for range updateAttempts {
		old, etag, err := s.get(ctx, id)
		if err != nil {
			return tenant.Tenant{}, err
		}
		t := clone(old)
		if err := change(&t); err != nil {
			return tenant.Tenant{}, err
		}
		if t.ID != id {
			return tenant.Tenant{}, fmt.Errorf("%w: id: a tenant's id cannot change", tenant.ErrInvalid)
		}
		if err := t.Validate(); err != nil {
			return tenant.Tenant{}, err
		}
		if err := s.t.ensure(ctx); err != nil {
			return tenant.Tenant{}, err
		}
		row, err := tenantRow(t)
		if err != nil {
			return tenant.Tenant{}, err
		}
		actions := []aztables.TransactionAction{{ActionType: aztables.TransactionTypeUpdateReplace, Entity: row, IfMatch: &etag}, epochAction(t)}
		idx, err := indexActions(&old, &t)
		if err != nil {
			return tenant.Tenant{}, err
		}
		actions = append(actions, idx...)
		_, err = s.t.client.SubmitTransaction(ctx, actions, nil)
		if err == nil {
			return t, nil
		}
		if !isTransactionFailure(err) {
			return tenant.Tenant{}, fmt.Errorf("update tenant %s: %w", id, err)
		}
		// Either the tenant changed under us (start over) or an application
		// id belongs to someone else.
		if _, now, gerr := s.get(ctx, id); gerr == nil && now == etag {
			if err := s.appsFree(ctx, id, t.AppIDs); err != nil {
				return tenant.Tenant{}, err
			}
			return tenant.Tenant{}, fmt.Errorf("update tenant %s: %w", id, err)
		}
	}
	return tenant.Tenant{}, fmt.Errorf("tenant %s: %w: it keeps changing concurrently", id, tenant.ErrConflict)
}

// appsFree returns tenant.ErrConflict if one of appIDs maps to a tenant
// other than id.
func (s *Tenants) appsFree(ctx context.Context, id string, appIDs []string) error {
	for _, a := range appIDs {
		c, err := s.AppCredential(ctx, a)
		if err == nil && c.TenantID != id {
			return fmt.Errorf("app id %s: %w: it is mapped to another tenant", a, tenant.ErrConflict)
		}
	}
	return nil
}

// KeyCredential returns the API key with the given id and its tenant's id
// and state, in one point read; tenant.ErrNotFound if there is none.
func (s *Tenants) KeyCredential(ctx context.Context, keyID string) (tenant.Credential, error) {
	if !tenant.IsKeyID(keyID) {
		return tenant.Credential{}, tenant.ErrNotFound
	}
	return s.credential(ctx, keyPrefix+keyID)
}

// AppCredential returns the tenant an Entra application id maps to, and its
// state; tenant.ErrNotFound if none.
func (s *Tenants) AppCredential(ctx context.Context, appID string) (tenant.Credential, error) {
	if !tenant.IsAppID(appID) {
		return tenant.Credential{}, tenant.ErrNotFound
	}
	return s.credential(ctx, appPrefix+appID)
}

func (s *Tenants) credential(ctx context.Context, rowKey string) (tenant.Credential, error) {
	res, err := s.t.client.GetEntity(ctx, tenantsPartition, rowKey, nil)
	if err != nil {
		if isNotFound(err) {
			return tenant.Credential{}, tenant.ErrNotFound
		}
		return tenant.Credential{}, fmt.Errorf("read credential: %w", err)
	}
	var e credentialEntity
	if err := json.Unmarshal(res.Value, &e); err != nil {
		return tenant.Credential{}, fmt.Errorf("decode credential: %w", err)
	}
	c := tenant.Credential{TenantID: e.TenantID, State: tenant.State(e.State)}
	if e.Kind == "key" {
		c.Key = tenant.Key{ID: rowKey[len(keyPrefix):], Salt: e.Salt, Hash: e.Hash, Created: e.Created, Expires: e.expires()}
	}
	if c.TenantID == "" {
		return tenant.Credential{}, errors.New("decode credential: no tenant id")
	}
	return c, nil
}

// CredentialEpoch returns a value that changes with every change to any
// tenant (its state, keys or application ids), made by any process: the
// ETag of a row that Create and Update rewrite in the same transaction as
// the tenant. "" until the first change. It is one point read, so an
// instance can check every few seconds whether what it has cached may be
// stale, whatever the number of credentials it holds.
func (s *Tenants) CredentialEpoch(ctx context.Context) (string, error) {
	res, err := s.t.client.GetEntity(ctx, tenantsPartition, epochRow, nil)
	if err != nil {
		if isNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("read credential epoch: %w", err)
	}
	return string(res.ETag), nil
}

func clone(t tenant.Tenant) tenant.Tenant {
	t.Aliases = slices.Clone(t.Aliases)
	t.AppIDs = slices.Clone(t.AppIDs)
	t.Keys = slices.Clone(t.Keys)
	return t
}
