package tablestore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/reconcile"
)

// DefaultWatermarksTable holds where periodic work has got to:
//
//	PartitionKey "<name>"   RowKey "watermark"   Next (RFC 3339, UTC)
//
// Writes are guarded by the row's ETag.
const DefaultWatermarksTable = "offpathwatermarks"

const watermarkRow = "watermark"

// Watermark is one named watermark: the reconciliation's Watermark.
type Watermark struct {
	t    table
	name string
}

// NewWatermark returns the watermark called name on the named table
// (empty: DefaultWatermarksTable).
func NewWatermark(svc *aztables.ServiceClient, tableName, name string) *Watermark {
	return &Watermark{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultWatermarksTable))}, name: name}
}

// Load returns the watermark and its ETag; the zero time and "" when there
// is none.
func (w *Watermark) Load(ctx context.Context) (time.Time, string, error) {
	res, err := w.t.client.GetEntity(ctx, w.name, watermarkRow, nil)
	if err != nil {
		if isNotFound(err) {
			return time.Time{}, "", nil
		}
		return time.Time{}, "", fmt.Errorf("read watermark %s: %w", w.name, err)
	}
	var row struct{ Next string }
	if err := json.Unmarshal(res.Value, &row); err != nil {
		return time.Time{}, "", fmt.Errorf("decode watermark %s: %w", w.name, err)
	}
	next, err := time.Parse(time.RFC3339, row.Next)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("decode watermark %s: %w", w.name, err)
	}
	return next.UTC(), string(res.ETag), nil
}

// Save writes next if the row's ETag is still version ("": if there is no
// row yet); reconcile.ErrConflict if another run wrote first.
func (w *Watermark) Save(ctx context.Context, next time.Time, version string) (string, error) {
	row, err := json.Marshal(map[string]string{"PartitionKey": w.name, "RowKey": watermarkRow, "Next": next.UTC().Format(time.RFC3339)})
	if err != nil {
		return "", fmt.Errorf("encode watermark %s: %w", w.name, err)
	}
	saved, stale, err := w.t.save(ctx, row, version)
	switch {
	case stale:
		return "", fmt.Errorf("watermark %s: %w", w.name, reconcile.ErrConflict)
	case err != nil:
		return "", fmt.Errorf("write watermark %s: %w", w.name, err)
	}
	return saved, nil
}
