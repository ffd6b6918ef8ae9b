package tablestore

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/tenant"
)

const edmDateTime, edmInt64, edmBinary = "Edm.DateTime", "Edm.Int64", "Edm.Binary"

// tenantEntity is a tenant's own row. Lists are JSON text: Table Storage
// has no list type, and the tenant row is read whole.
type tenantEntity struct {
	PartitionKey           string
	RowKey                 string
	Kind                   string
	TenantID               string
	DisplayName            string
	Aliases                string
	MonthlyTokenBudget     int64  `json:",string"`
	MonthlyTokenBudgetType string `json:"MonthlyTokenBudget@odata.type"`
	DataZone               string `json:",omitempty"`
	State                  string
	AppIDs                 string
	Keys                   string
	Created                time.Time
	CreatedType            string `json:"Created@odata.type"`
	Updated                time.Time
	UpdatedType            string `json:"Updated@odata.type"`
}

// keyJSON is one key inside the tenant row's Keys.
type keyJSON struct {
	ID      string    `json:"id"`
	Salt    []byte    `json:"salt"`
	Hash    []byte    `json:"hash"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"`
}

// credentialEntity is an index row: one per API key ("key") and one per
// Entra application id ("app"), a projection of the tenant row.
type credentialEntity struct {
	PartitionKey string
	RowKey       string
	Kind         string
	TenantID     string
	State        string
	Salt         []byte `json:",omitempty"`
	SaltType     string `json:"Salt@odata.type,omitempty"`
	Hash         []byte `json:",omitempty"`
	HashType     string `json:"Hash@odata.type,omitempty"`
	Created      time.Time
	CreatedType  string     `json:"Created@odata.type"`
	Expires      *time.Time `json:",omitempty"`
	ExpiresType  string     `json:"Expires@odata.type,omitempty"`
}

func (e *credentialEntity) expires() time.Time {
	if e.Expires == nil {
		return time.Time{}
	}
	return *e.Expires
}

func tenantRow(t tenant.Tenant) ([]byte, error) {
	keys := make([]keyJSON, len(t.Keys))
	for i, k := range t.Keys {
		keys[i] = keyJSON{ID: k.ID, Salt: k.Salt, Hash: k.Hash, Created: k.Created.UTC(), Expires: k.Expires.UTC()}
	}
	aliases, _ := json.Marshal(nonNil(t.Aliases))
	apps, _ := json.Marshal(nonNil(t.AppIDs))
	keysJSON, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("encode tenant %s: %w", t.ID, err)
	}
	return json.Marshal(tenantEntity{
		PartitionKey: tenantsPartition, RowKey: tenantPrefix + t.ID, Kind: "tenant",
		TenantID: t.ID, DisplayName: t.DisplayName, Aliases: string(aliases),
		MonthlyTokenBudget: t.MonthlyTokenBudget, MonthlyTokenBudgetType: edmInt64,
		DataZone: t.DataZone, State: string(t.State), AppIDs: string(apps), Keys: string(keysJSON),
		Created: t.Created.UTC(), CreatedType: edmDateTime, Updated: t.Updated.UTC(), UpdatedType: edmDateTime,
	})
}

func decodeTenant(b []byte) (tenant.Tenant, error) {
	var e tenantEntity
	if err := json.Unmarshal(b, &e); err != nil {
		return tenant.Tenant{}, fmt.Errorf("decode tenant row: %w", err)
	}
	t := tenant.Tenant{
		ID: e.TenantID, DisplayName: e.DisplayName, MonthlyTokenBudget: e.MonthlyTokenBudget,
		DataZone: e.DataZone, State: tenant.State(e.State), Created: e.Created.UTC(), Updated: e.Updated.UTC(),
	}
	var keys []keyJSON
	for _, f := range []struct {
		name, text string
		dst        any
	}{{"Aliases", e.Aliases, &t.Aliases}, {"AppIDs", e.AppIDs, &t.AppIDs}, {"Keys", e.Keys, &keys}} {
		if f.text == "" {
			continue
		}
		if err := json.Unmarshal([]byte(f.text), f.dst); err != nil {
			return tenant.Tenant{}, fmt.Errorf("decode tenant row %s: %w", f.name, err)
		}
	}
	for _, k := range keys {
		t.Keys = append(t.Keys, tenant.Key{ID: k.ID, Salt: k.Salt, Hash: k.Hash, Created: k.Created.UTC(), Expires: k.Expires.UTC()})
	}
	return t, nil
}

// indexActions are the transaction actions that make the credential index
// match t (and drop what old had and t has not). old is nil on create.
func indexActions(old, t *tenant.Tenant) ([]aztables.TransactionAction, error) {
	var actions []aztables.TransactionAction
	add := func(kind aztables.TransactionType, e credentialEntity) error {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode credential row: %w", err)
		}
		actions = append(actions, aztables.TransactionAction{ActionType: kind, Entity: b})
		return nil
	}
	del := func(rowKey string) {
		b, _ := json.Marshal(aztables.Entity{PartitionKey: tenantsPartition, RowKey: rowKey})
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeDelete, Entity: b})
	}
	keep := map[string]bool{}
	for _, k := range t.Keys {
		keep[keyPrefix+k.ID] = true
		e := credentialEntity{
			PartitionKey: tenantsPartition, RowKey: keyPrefix + k.ID, Kind: "key", TenantID: t.ID, State: string(t.State),
			Salt: k.Salt, SaltType: edmBinary, Hash: k.Hash, HashType: edmBinary, Created: k.Created.UTC(), CreatedType: edmDateTime,
		}
		if !k.Expires.IsZero() {
			exp := k.Expires.UTC()
			e.Expires, e.ExpiresType = &exp, edmDateTime
		}
		// A key row is new only when the key is: Add, so that a key id
		// collision (2^80 ids) fails the transaction instead of replacing
		// someone else's key.
		kind := aztables.TransactionTypeInsertReplace
		if old == nil || !hasKey(old, k.ID) {
			kind = aztables.TransactionTypeAdd
		}
		if err := add(kind, e); err != nil {
			return nil, err
		}
	}
	for _, a := range t.AppIDs {
		keep[appPrefix+a] = true
		kind := aztables.TransactionTypeInsertReplace
		if old == nil || !slices.Contains(old.AppIDs, a) {
			kind = aztables.TransactionTypeAdd // fails if another tenant has it
		}
		e := credentialEntity{PartitionKey: tenantsPartition, RowKey: appPrefix + a, Kind: "app", TenantID: t.ID, State: string(t.State),
			Created: t.Updated.UTC(), CreatedType: edmDateTime}
		if err := add(kind, e); err != nil {
			return nil, err
		}
	}
	if old != nil {
		for _, k := range old.Keys {
			if !keep[keyPrefix+k.ID] {
				del(keyPrefix + k.ID)
			}
		}
		for _, a := range old.AppIDs {
			if !keep[appPrefix+a] {
				del(appPrefix + a)
			}
		}
	}
	return actions, nil
}

// epochEntity is the row whose ETag is the credential epoch; it names the
// last change for whoever looks at the table.
type epochEntity struct {
	PartitionKey string
	RowKey       string
	Kind         string
	TenantID     string
	Changed      time.Time
	ChangedType  string `json:"Changed@odata.type"`
}

// epochAction rewrites the epoch row, unconditionally: concurrent changes
// to different tenants each move the epoch and never conflict on it.
func epochAction(t tenant.Tenant) aztables.TransactionAction {
	b, _ := json.Marshal(epochEntity{PartitionKey: tenantsPartition, RowKey: epochRow, Kind: "epoch", TenantID: t.ID,
		Changed: t.Updated.UTC(), ChangedType: edmDateTime})
	return aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: b}
}

func hasKey(t *tenant.Tenant, id string) bool {
	for _, k := range t.Keys {
		if k.ID == id {
			return true
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
