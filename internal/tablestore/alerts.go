package tablestore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/alert"
)

// DefaultAlertsTable is the record of raised alerts (package alert's
// Recorder), which the operator's console reads, newest first:
//
//	PartitionKey "alert", RowKey "<inverted Unix nanoseconds, 19 digits>-<8 hex>" (alert.ValidID)
//	Name, Tenant, Job, Message, Fields (JSON), At
//
// The inverted time makes a plain partition query list the newest first.
// Rows older than the retention are hidden from List and deleted as new
// alerts are recorded (at most alertPruneBatch per record).
const DefaultAlertsTable = "offpathalerts"

// DefaultAlertRetention is how long a raised alert stays in the record.
const DefaultAlertRetention = 30 * 24 * time.Hour

const (
	alertPartition  = "alert"
	alertPruneBatch = 100
	// maxAlertText bounds the message and the fields' JSON: a Table
	// Storage string property holds at most 64 KiB.
	maxAlertText = 16 << 10
)

// Alerts is the record of raised alerts.
type Alerts struct {
	t         table
	retention time.Duration
	now       func() time.Time
}

// NewAlerts returns the record on the named table (empty:
// DefaultAlertsTable), keeping alerts for retention (zero:
// DefaultAlertRetention); now nil means time.Now.
func NewAlerts(svc *aztables.ServiceClient, tableName string, retention time.Duration, now func() time.Time) *Alerts {
	if retention <= 0 {
		retention = DefaultAlertRetention
	}
	if now == nil {
		now = time.Now
	}
	return &Alerts{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultAlertsTable))}, retention: retention, now: now}
}

// alertKey is the row key prefix of an alert raised at t.
func alertKey(t time.Time) string {
	return fmt.Sprintf("%019d", math.MaxInt64-t.UnixNano())
}

type alertEntity struct {
	PartitionKey, RowKey string
	Name, Tenant, Job    string
	Message              string
	Fields               string
	At                   time.Time
	AtType               string `json:"At@odata.type"`
}

// Record keeps a, then deletes up to alertPruneBatch alerts older than the
// retention.
func (s *Alerts) Record(ctx context.Context, a alert.Alert) error {
	if err := s.t.ensure(ctx); err != nil {
		return err
	}
	at := a.At
	if at.IsZero() {
		at = s.now()
	}
	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return fmt.Errorf("alert row key: %w", err)
	}
	e := alertEntity{PartitionKey: alertPartition, RowKey: alertKey(at) + "-" + hex.EncodeToString(suffix[:]),
		Name: a.Name, Tenant: a.Tenant, Job: a.Job, Message: a.Message, At: at.UTC(), AtType: edmDateTime}
	if len(e.Message) > maxAlertText {
		e.Message = strings.ToValidUTF8(e.Message[:maxAlertText], "") + "…"
	}
	if len(a.Fields) > 0 {
		b, err := json.Marshal(a.Fields)
		if err != nil || len(b) > maxAlertText {
			b, _ = json.Marshal(map[string]string{"note": "the alert's fields were too large or not JSON to record; see its log event"})
		}
		e.Fields = string(b)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode alert %s: %w", a.Name, err)
	}
	if _, err := s.t.client.AddEntity(ctx, b, nil); err != nil {
		return fmt.Errorf("record alert %s: %w", a.Name, err)
	}
	return s.prune(ctx)
}

// prune deletes a page of alerts older than the retention.
func (s *Alerts) prune(ctx context.Context) error {
	filter := "PartitionKey eq " + quote(alertPartition) + " and RowKey gt " + quote(alertKey(s.now().Add(-s.retention)))
	top := int32(alertPruneBatch)
	sel := "RowKey"
	pager := s.t.client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter, Top: &top, Select: &sel})
	if !pager.More() {
		return nil
	}
	page, err := pager.NextPage(ctx)
	if err != nil {
		return fmt.Errorf("list expired alerts: %w", err)
	}
	for _, b := range page.Entities {
		var row struct{ RowKey string }
		if err := json.Unmarshal(b, &row); err != nil {
			return fmt.Errorf("decode expired alert: %w", err)
		}
		if _, err := s.t.client.DeleteEntity(ctx, alertPartition, row.RowKey, nil); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete expired alert: %w", err)
		}
	}
	return nil
}

// List returns up to limit alerts raised within the retention, newest
// first, after the alert id cursor (""), and the cursor of the next page
// ("" when there is none). A malformed cursor lists nothing.
func (s *Alerts) List(ctx context.Context, cursor string, limit int) ([]alert.Recorded, string, error) {
	out := []alert.Recorded{}
	if cursor != "" && !alert.ValidID(cursor) {
		return out, "", nil
	}
	limit = max(1, min(limit, 1000))
	filter := "PartitionKey eq " + quote(alertPartition) + " and RowKey lt " + quote(alertKey(s.now().Add(-s.retention)))
	if cursor != "" {
		filter += " and RowKey gt " + quote(cursor)
	}
	top := int32(limit)
	more := false // an alert past the limit was seen
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter, Top: &top}) {
		if err != nil {
			return nil, "", fmt.Errorf("list alerts: %w", err)
		}
		if len(out) == limit {
			more = true
			break
		}
		var e alertEntity
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, "", fmt.Errorf("decode alert: %w", err)
		}
		a := alert.Recorded{ID: e.RowKey, Alert: alert.Alert{Name: e.Name, Tenant: e.Tenant, Job: e.Job, Message: e.Message, At: e.At.UTC()}}
		if e.Fields != "" {
			if err := json.Unmarshal([]byte(e.Fields), &a.Fields); err != nil {
				a.Fields = map[string]any{"note": "the recorded fields are not JSON"}
			}
		}
		out = append(out, a)
	}
	if !more {
		return out, "", nil
	}
	return out, out[len(out)-1].ID, nil
}
