package tablestore

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/document"
)

// DefaultDocumentsTable holds the queue path's document statuses:
//
//	PartitionKey "<tenant id>"      RowKey document.Key(name)   one row per document name
//	PartitionKey "_unattributed"    RowKey document.Key(...)    rejections naming no tenant
//
// A row is the document's latest version: queryable State, ETag and
// Updated properties, and the whole document.Status as JSON in Doc.
const DefaultDocumentsTable = "offpathdocuments"

// documentUpdateAttempts bounds Update's optimistic-concurrency retries.
const documentUpdateAttempts = 8

// Documents stores document statuses.
type Documents struct {
	t   table
	now func() time.Time
}

// NewDocuments returns the status store on the named table (empty:
// DefaultDocumentsTable). now stamps Updated (nil: time.Now).
func NewDocuments(svc *aztables.ServiceClient, tableName string, now func() time.Time) *Documents {
	if now == nil {
		now = time.Now
	}
	return &Documents{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultDocumentsTable))}, now: now}
}

// Get returns the status of the document name (tenant folder included)
// in partition; document.ErrNotFound if there is none.
func (s *Documents) Get(ctx context.Context, partition, name string) (document.Status, error) {
	res, err := s.t.client.GetEntity(ctx, partition, document.Key(name), nil)
	if err != nil {
		if isNotFound(err) {
			return document.Status{}, fmt.Errorf("document %s: %w", document.Printable(name), document.ErrNotFound)
		}
		return document.Status{}, fmt.Errorf("read document status: %w", err)
	}
	st, err := decodeDocument(res.Value)
	if err != nil {
		return document.Status{}, err
	}
	st.Version = string(res.ETag)
	return st, nil
}

// Put writes st as the status of the document name, replacing any.
func (s *Documents) Put(ctx context.Context, name string, st document.Status) (document.Status, error) {
	return s.write(ctx, name, st, "", true)
}

// Update reads the status of name, lets change edit it (found is false
// when there is none: st is then zero), and writes it back if change
// returns true, guarded by the row's ETag; a concurrent change makes it
// start over, a few times, before it gives up with an error (transient).
// change must not keep st. The status written (or read, when change
// declines) is returned.
func (s *Documents) Update(ctx context.Context, partition, name string, change func(st *document.Status, found bool) (bool, error)) (document.Status, error) {
	for attempt := range documentUpdateAttempts {
		if attempt > 0 { // let the other writer finish
			time.Sleep(time.Duration(attempt) * time.Duration(rand.IntN(20)+1) * time.Millisecond)
		}
		st, err := s.Get(ctx, partition, name)
		found := err == nil
		if err != nil && !errors.Is(err, document.ErrNotFound) {
			return document.Status{}, err
		}
		version := st.Version
		write, err := change(&st, found)
		if err != nil || !write {
			return st, err
		}
		if cmp.Or(st.Tenant, document.Unattributed) != partition {
			return document.Status{}, fmt.Errorf("update document status: partition %q, status of tenant %q", partition, st.Tenant)
		}
		out, err := s.write(ctx, name, st, version, false) // a new row when none was found
		if err == nil {
			return out, nil
		}
		if !isPrecondition(err) {
			return document.Status{}, err
		}
	}
	return document.Status{}, fmt.Errorf("document %s: its status keeps changing concurrently", document.Printable(name))
}

// List returns up to limit statuses of a tenant (or of the unattributed
// partition), in key order.
func (s *Documents) List(ctx context.Context, partition string, limit int) ([]document.Status, error) {
	filter := "PartitionKey eq " + quote(partition)
	top := int32(min(max(limit, 1), 1000))
	out := []document.Status{}
	if limit <= 0 {
		return out, nil
	}
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter, Top: &top}) {
		if err != nil {
			return nil, fmt.Errorf("list document statuses of %s: %w", partition, err)
		}
		st, err := decodeDocument(b)
		if err != nil {
			return nil, err
		}
		if out = append(out, st); len(out) == limit {
			break
		}
	}
	return out, nil
}

// Page returns up to limit statuses and the cursor of the next page ("" at
// the end), in the table's key order (stable, not by time): those of
// partition (every partition when empty) in state (any when empty), from
// cursor (a previous page's, "" for the first). A cursor is opaque; one
// that is not this store's is document.ErrBadCursor.
func (s *Documents) Page(ctx context.Context, partition string, state document.State, cursor string, limit int) ([]document.Status, string, error) {
	var filters []string
	if partition != "" {
		filters = append(filters, "PartitionKey eq "+quote(partition))
	}
	if state != "" {
		filters = append(filters, "State eq "+quote(string(state)))
	}
	var filter *string
	if len(filters) > 0 {
		filter = to.Ptr(strings.Join(filters, " and "))
	}
	var pk, rk *string
	if cursor != "" {
		p, r, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		pk, rk = &p, &r
	}
	limit = min(max(limit, 1), 1000)
	out := []document.Status{}
	// One request at a time, each asking for what is still missing, so a
	// page ends where the service's continuation says the next begins.
	for len(out) < limit {
		pager := s.t.client.NewListEntitiesPager(&aztables.ListEntitiesOptions{
			Filter: filter, Top: to.Ptr(int32(limit - len(out))), NextPartitionKey: pk, NextRowKey: rk})
		page, err := pager.NextPage(ctx)
		if err != nil {
			if isNotFound(err) {
				return out, "", nil
			}
			if cursor != "" && isBadRequest(err) {
				return nil, "", document.ErrBadCursor
			}
			return nil, "", fmt.Errorf("list document statuses: %w", err)
		}
		for _, b := range page.Entities {
			st, err := decodeDocument(b)
			if err != nil {
				return nil, "", err
			}
			out = append(out, st)
		}
		if page.NextPartitionKey == nil || page.NextRowKey == nil {
			return out, "", nil
		}
		pk, rk = page.NextPartitionKey, page.NextRowKey
	}
	return out, encodeCursor(*pk, *rk), nil
}

// encodeCursor makes a page cursor of the next row's keys.
func encodeCursor(pk, rk string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(pk + "\n" + rk))
}

// decodeCursor reads a cursor of encodeCursor: the service's two
// continuation tokens, printable ASCII without quotes.
func decodeCursor(c string) (pk, rk string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(c) > 440 {
		return "", "", document.ErrBadCursor
	}
	pk, rk, ok := strings.Cut(string(b), "\n")
	if !ok || !cursorKey(pk) || !cursorKey(rk) {
		return "", "", document.ErrBadCursor
	}
	return pk, rk, nil
}

// cursorKey reports whether k can be a continuation token.
func cursorKey(k string) bool {
	if k == "" || len(k) > 160 {
		return false
	}
	for _, c := range k {
		if c <= ' ' || c >= 0x7f || c == '\'' || c == '"' {
			return false
		}
	}
	return true
}

// write stores st under name: over whatever is there when upsert, else
// as table.save does (a new row when version is "", otherwise only over
// the row at that version).
func (s *Documents) write(ctx context.Context, name string, st document.Status, version string, upsert bool) (document.Status, error) {
	if err := s.t.ensure(ctx); err != nil {
		return document.Status{}, err
	}
	st.Updated = s.now().UTC()
	row, err := documentRow(name, st)
	if err != nil {
		return document.Status{}, err
	}
	if upsert {
		var r aztables.UpsertEntityResponse
		r, err = s.t.client.UpsertEntity(ctx, row, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
		st.Version = string(r.ETag)
	} else {
		st.Version, _, err = s.t.save(ctx, row, version)
	}
	if err != nil {
		return document.Status{}, fmt.Errorf("write document status: %w", err)
	}
	return st, nil
}

func documentRow(name string, st document.Status) ([]byte, error) {
	doc, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode document status: %w", err)
	}
	if len(doc) > 60_000 {
		return nil, fmt.Errorf("document status of %d bytes exceeds a table property", len(doc))
	}
	partition := st.Tenant
	if partition == "" {
		partition = document.Unattributed
	}
	return json.Marshal(map[string]any{
		"PartitionKey": partition, "RowKey": document.Key(name),
		"State": string(st.State), "ETag": st.ETag,
		"Updated": st.Updated.UTC(), "Updated@odata.type": edmDateTime,
		"Doc": string(doc),
	})
}

func decodeDocument(b []byte) (document.Status, error) {
	var row struct{ Doc string }
	if err := json.Unmarshal(b, &row); err != nil {
		return document.Status{}, fmt.Errorf("decode document status row: %w", err)
	}
	var st document.Status
	if err := json.Unmarshal([]byte(row.Doc), &st); err != nil {
		return document.Status{}, fmt.Errorf("decode document status: %w", err)
	}
	return st, nil
}

// isPrecondition reports a 412 (the row changed) or 409 (it appeared).
func isPrecondition(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && (re.StatusCode == 412 || re.StatusCode == 409)
}
