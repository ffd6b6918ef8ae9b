package tablestore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/ratelimit"
)

// DefaultRateLimitsTable holds the queue path's shared rate-limit pools:
//
//	PartitionKey "<deployment>"   RowKey "pool"   one row per deployment
//
// The row's Pool property is the ratelimit.Pool as JSON: every process's
// lease and the parts still cooling. Writes are guarded by the row's ETag.
const DefaultRateLimitsTable = "offpathratelimits"

// poolRow is the RowKey of a deployment's pool.
const poolRow = "pool"

// maxPoolBytes keeps the Pool property within Table Storage's 64 KiB
// limit for one string property.
const maxPoolBytes = 60_000

// RateLimits is the lease store of package ratelimit.
type RateLimits struct {
	t table
}

// NewRateLimits returns the lease store on the named table (empty:
// DefaultRateLimitsTable).
func NewRateLimits(svc *aztables.ServiceClient, tableName string) *RateLimits {
	return &RateLimits{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultRateLimitsTable))}}
}

// Load returns the deployment's pool and its ETag; an empty pool and ""
// when there is none.
func (s *RateLimits) Load(ctx context.Context, deployment string) (ratelimit.Pool, string, error) {
	res, err := s.t.client.GetEntity(ctx, deployment, poolRow, nil)
	if err != nil {
		if isNotFound(err) {
			return ratelimit.Pool{}, "", nil
		}
		return ratelimit.Pool{}, "", fmt.Errorf("read rate limit pool %s: %w", deployment, err)
	}
	var row struct{ Pool string }
	if err := json.Unmarshal(res.Value, &row); err != nil {
		return ratelimit.Pool{}, "", fmt.Errorf("decode rate limit pool row %s: %w", deployment, err)
	}
	var p ratelimit.Pool
	if row.Pool != "" {
		if err := json.Unmarshal([]byte(row.Pool), &p); err != nil {
			return ratelimit.Pool{}, "", fmt.Errorf("decode rate limit pool %s: %w", deployment, err)
		}
	}
	return p, string(res.ETag), nil
}

// Save writes the pool if its ETag is still version ("": if there is no
// row yet); ratelimit.ErrConflict if another process wrote first.
func (s *RateLimits) Save(ctx context.Context, deployment string, p ratelimit.Pool, version string) (string, error) {
	doc, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode rate limit pool %s: %w", deployment, err)
	}
	if len(doc) > maxPoolBytes {
		return "", fmt.Errorf("rate limit pool %s: %d bytes, more than a table property holds (%d members)", deployment, len(doc), len(p.Members))
	}
	row, err := json.Marshal(map[string]string{"PartitionKey": deployment, "RowKey": poolRow, "Pool": string(doc)})
	if err != nil {
		return "", fmt.Errorf("encode rate limit pool row %s: %w", deployment, err)
	}
	next, stale, err := s.t.save(ctx, row, version)
	switch {
	case stale:
		return "", fmt.Errorf("rate limit pool %s: %w", deployment, ratelimit.ErrConflict)
	case err != nil:
		return "", fmt.Errorf("write rate limit pool %s: %w", deployment, err)
	}
	return next, nil
}
