package tablestore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/audit"
)

// DefaultAuditTable remembers what the second-door audit (package audit)
// has alerted and booked, so that each batch or file offpath did not
// create is alerted once and its usage booked once:
//
//	PartitionKey "batch", RowKey "<Azure batch id>"   an unknown or orphaned batch: alerted, then booked once it ended
//	PartitionKey "file",  RowKey "<Azure file id>"    an unknown file: alerted
//
// An audit run reads each partition whole, once. Rows are plain
// properties, readable in Storage Explorer.
const DefaultAuditTable = "offpathaudit"

// Audit stores the second-door audit's records.
type Audit struct {
	t table
}

// NewAudit returns the audit store on the named table (empty:
// DefaultAuditTable).
func NewAudit(svc *aztables.ServiceClient, tableName string) *Audit {
	return &Audit{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultAuditTable))}}
}

// Load returns every record of a kind, by Azure id: one partition query.
func (s *Audit) Load(ctx context.Context, kind audit.Kind) (map[string]audit.Record, error) {
	filter := "PartitionKey eq " + quote(string(kind))
	out := map[string]audit.Record{}
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter}) {
		if err != nil {
			return nil, fmt.Errorf("read audit records of kind %s: %w", kind, err)
		}
		var e auditEntity
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("decode audit record of kind %s: %w", kind, err)
		}
		out[e.RowKey] = e.record()
	}
	return out, nil
}

// Put writes a record, replacing the one with the same kind and id.
func (s *Audit) Put(ctx context.Context, r audit.Record) error {
	if r.Kind != audit.KindBatch && r.Kind != audit.KindFile {
		return fmt.Errorf("audit record: kind %q is not %q or %q", r.Kind, audit.KindBatch, audit.KindFile)
	}
	if !validRowKey(r.ID) {
		return fmt.Errorf("audit record: %q is not usable as a row key", r.ID)
	}
	if err := s.t.ensure(ctx); err != nil {
		return err
	}
	b, err := json.Marshal(toAuditEntity(r))
	if err != nil {
		return fmt.Errorf("encode audit record %s: %w", r.ID, err)
	}
	if _, err := s.t.client.UpsertEntity(ctx, b, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
		return fmt.Errorf("write audit record %s %s: %w", r.Kind, r.ID, err)
	}
	return nil
}

// validRowKey rejects what Table Storage refuses in a key: / \ # ?,
// control characters, and more than 1 KiB. Azure's ids never have them.
func validRowKey(s string) bool {
	if s == "" || len(s) > 1024 || strings.ContainsAny(s, `/\#?`) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) })
}

// auditEntity is an audit row. Times that may be unset are pointers, so
// that an unset time is an absent property; counters are Edm.Int64.
type auditEntity struct {
	PartitionKey string
	RowKey       string
	Alerted      *time.Time `json:",omitempty"`
	AlertedType  string     `json:"Alerted@odata.type,omitempty"`
	Created      *time.Time `json:",omitempty"`
	CreatedType  string     `json:"Created@odata.type,omitempty"`
	Status       string     `json:",omitempty"`
	InputFileID  string     `json:",omitempty"`
	OutputFileID string     `json:",omitempty"`
	ErrorFileID  string     `json:",omitempty"`
	Booked       *time.Time `json:",omitempty"`
	BookedType   string     `json:"Booked@odata.type,omitempty"`
	Alias        string     `json:",omitempty"`
	Deployment   string     `json:",omitempty"`
	usageColumns
	Note      string `json:",omitempty"`
	Filename  string `json:",omitempty"`
	Purpose   string `json:",omitempty"`
	Bytes     int64  `json:",string"`
	BytesType string `json:"Bytes@odata.type"`
	Job       string `json:",omitempty"`
	Tenant    string `json:",omitempty"`
}

func toAuditEntity(r audit.Record) auditEntity {
	at := func(t time.Time) (*time.Time, string) {
		if t.IsZero() {
			return nil, ""
		}
		u := t.UTC()
		return &u, edmDateTime
	}
	e := auditEntity{
		PartitionKey: string(r.Kind), RowKey: r.ID,
		Status: r.Status, InputFileID: r.InputFileID, OutputFileID: r.OutputFileID, ErrorFileID: r.ErrorFileID,
		Alias: r.Alias, Deployment: r.Deployment, Note: r.Note, Filename: r.Filename, Purpose: r.Purpose,
		usageColumns: toUsageColumns(r.Usage),
		Bytes:        r.Bytes, BytesType: edmInt64, Job: r.Job, Tenant: r.Tenant,
	}
	e.Alerted, e.AlertedType = at(r.AlertedAt)
	e.Created, e.CreatedType = at(r.CreatedAt)
	e.Booked, e.BookedType = at(r.BookedAt)
	return e
}

func (e *auditEntity) record() audit.Record {
	at := func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return t.UTC()
	}
	return audit.Record{
		Kind: audit.Kind(e.PartitionKey), ID: e.RowKey,
		AlertedAt: at(e.Alerted), CreatedAt: at(e.Created), BookedAt: at(e.Booked),
		Status: e.Status, InputFileID: e.InputFileID, OutputFileID: e.OutputFileID, ErrorFileID: e.ErrorFileID,
		Alias: e.Alias, Deployment: e.Deployment, Note: e.Note, Filename: e.Filename, Purpose: e.Purpose, Bytes: e.Bytes,
		Usage: e.usage(), Job: e.Job, Tenant: e.Tenant,
	}
}
