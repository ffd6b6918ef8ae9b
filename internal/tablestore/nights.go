package tablestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/nightly"
)

// DefaultNightsTable holds the nightly runs' records:
//
//	PartitionKey "<tenant id>", RowKey "<yyyy-mm-dd>"   one day's run
//
// The record is a JSON document in Doc; Reported mirrors whether its report
// is written, so that the unreported days are one filtered query.
const DefaultNightsTable = "offpathnights"

// Nights stores the nightly runs' records.
type Nights struct{ t table }

// NewNights returns the store on the named table (empty: DefaultNightsTable).
func NewNights(svc *aztables.ServiceClient, tableName string) *Nights {
	return &Nights{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultNightsTable))}}
}

type nightEntity struct {
	PartitionKey string
	RowKey       string
	Doc          string
	Reported     bool
}

func nightRow(n nightly.Night) ([]byte, error) {
	doc, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("encode night %s: %w", n.Day, err)
	}
	return json.Marshal(nightEntity{PartitionKey: n.Tenant, RowKey: n.Day, Doc: string(doc), Reported: n.Reported()})
}

func decodeNight(b []byte, etag azcore.ETag) (nightly.Night, error) {
	var e nightEntity
	if err := json.Unmarshal(b, &e); err != nil {
		return nightly.Night{}, fmt.Errorf("decode night: %w", err)
	}
	var n nightly.Night
	if err := json.Unmarshal([]byte(e.Doc), &n); err != nil {
		return nightly.Night{}, fmt.Errorf("decode night %s: %w", e.RowKey, err)
	}
	n.ETag = string(etag)
	return n, nil
}

// Get returns a tenant's record of day, or nightly.ErrNotFound.
func (s *Nights) Get(ctx context.Context, tenantID, day string) (nightly.Night, error) {
	res, err := s.t.client.GetEntity(ctx, tenantID, day, nil)
	if err != nil {
		if isNotFound(err) {
			return nightly.Night{}, fmt.Errorf("night %s: %w", day, nightly.ErrNotFound)
		}
		return nightly.Night{}, fmt.Errorf("read night %s: %w", day, err)
	}
	return decodeNight(res.Value, res.ETag)
}

// Create stores a new record, or returns nightly.ErrExists.
func (s *Nights) Create(ctx context.Context, n nightly.Night) (nightly.Night, error) {
	if err := s.t.ensure(ctx); err != nil {
		return nightly.Night{}, err
	}
	row, err := nightRow(n)
	if err != nil {
		return nightly.Night{}, err
	}
	res, err := s.t.client.AddEntity(ctx, row, nil)
	if err != nil {
		var re *azcore.ResponseError
		if hasCode(err, aztables.EntityAlreadyExists) || (errors.As(err, &re) && re.StatusCode == http.StatusConflict) {
			return nightly.Night{}, fmt.Errorf("night %s: %w", n.Day, nightly.ErrExists)
		}
		return nightly.Night{}, fmt.Errorf("create night %s: %w", n.Day, err)
	}
	n.ETag = string(res.ETag)
	return n, nil
}

// Update replaces a record if its ETag still matches, else
// nightly.ErrConflict.
func (s *Nights) Update(ctx context.Context, n nightly.Night) (nightly.Night, error) {
	row, err := nightRow(n)
	if err != nil {
		return nightly.Night{}, err
	}
	version, stale, err := s.t.replace(ctx, row, n.ETag)
	switch {
	case stale:
		return nightly.Night{}, fmt.Errorf("night %s: %w", n.Day, nightly.ErrConflict)
	case err != nil:
		return nightly.Night{}, fmt.Errorf("update night %s: %w", n.Day, err)
	}
	n.ETag = version
	return n, nil
}

// Unreported returns a tenant's records whose report is not written.
func (s *Nights) Unreported(ctx context.Context, tenantID string) ([]nightly.Night, error) {
	filter := fmt.Sprintf("PartitionKey eq %s and Reported eq false", quote(tenantID))
	var out []nightly.Night
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter}) {
		if err != nil {
			return nil, fmt.Errorf("list unreported nights: %w", err)
		}
		var meta struct {
			ETag azcore.ETag `json:"odata.etag"`
		}
		_ = json.Unmarshal(b, &meta)
		n, err := decodeNight(b, meta.ETag)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
