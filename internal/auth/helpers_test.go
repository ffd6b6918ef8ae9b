package auth_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

// One Azurite for the package; tests keep apart by table name.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// newStore returns a tenant store on a fresh table of the shared Azurite.
func newStore(tb testing.TB) *tablestore.Tenants {
	tb.Helper()
	return tenantsOn(tb, tableName())
}

// tableName is a fresh table name.
func tableName() string {
	return "auth" + azurite.Suffix()
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// seed creates an active tenant with one key and the given app ids and
// returns the plain key.
func seed(tb testing.TB, s *tablestore.Tenants, id string, now time.Time, apps ...string) string {
	tb.Helper()
	t := tenant.New(id, "Team "+id, now)
	t.AppIDs = apps
	plain, _, err := t.RotateKey(rand.Reader, now, tenant.DefaultOverlap)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Create(context.Background(), t); err != nil {
		tb.Fatal(err)
	}
	return plain
}

// memStore is an in-memory Credentials that counts its reads, for tests
// that present thousands of credentials.
type memStore struct {
	mu       sync.Mutex
	keys     map[string]tenant.Credential
	apps     map[string]tenant.Credential
	epoch    string
	epochErr error
	reads    map[string]int // by id
	total    int
}

func newMemStore() *memStore {
	return &memStore{keys: map[string]tenant.Credential{}, apps: map[string]tenant.Credential{}, reads: map[string]int{}}
}

// addKey makes an active tenant's key and returns the plain key.
func (m *memStore) addKey(tb testing.TB, tenantID string, now time.Time) (plain, id string) {
	tb.Helper()
	plain, k, err := tenant.NewKey(rand.Reader, now)
	if err != nil {
		tb.Fatal(err)
	}
	m.add(tenantID, k)
	return plain, k.ID
}

// add makes an active tenant with key k and the app ids apps, as the
// tenant store's Create does: its credentials read at once, and the epoch
// moves.
func (m *memStore) add(tenantID string, k tenant.Key, apps ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[k.ID] = tenant.Credential{TenantID: tenantID, State: tenant.Active, Key: k}
	for _, a := range apps {
		m.apps[a] = tenant.Credential{TenantID: tenantID, State: tenant.Active}
	}
	m.moveEpoch(tenantID)
}

// moveEpoch changes the epoch for a change to tenantID. m.mu is held.
func (m *memStore) moveEpoch(tenantID string) {
	m.epoch = fmt.Sprintf("%s+%s", m.epoch, tenantID)
}

func (m *memStore) get(set map[string]tenant.Credential, id string) (tenant.Credential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads[id]++
	m.total++
	if c, ok := set[id]; ok {
		return c, nil
	}
	return tenant.Credential{}, tenant.ErrNotFound
}

func (m *memStore) KeyCredential(_ context.Context, id string) (tenant.Credential, error) {
	return m.get(m.keys, id)
}

func (m *memStore) AppCredential(_ context.Context, id string) (tenant.Credential, error) {
	return m.get(m.apps, id)
}

func (m *memStore) CredentialEpoch(context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch, m.epochErr
}

// readsOf returns how often id was read, and all reads.
func (m *memStore) readsOf(id string) (int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads[id], m.total
}

// suspend suspends a tenant, as the tenant store's Update does: each of
// its credentials reads suspended, and the epoch moves.
func (m *memStore) suspend(tenantID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, set := range []map[string]tenant.Credential{m.keys, m.apps} {
		for id, c := range set {
			if c.TenantID == tenantID {
				c.State = tenant.Suspended
				set[id] = c
			}
		}
	}
	m.moveEpoch(tenantID)
}
