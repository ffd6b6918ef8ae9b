package tablestore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/batch"
)

// DefaultJobsTable holds batch jobs, the tenants' idempotency keys and the
// poller's index of active jobs:
//
//	PartitionKey "<tenant id>", RowKey "j:<job id>"   a job; ids sort newest first
//	PartitionKey "<tenant id>", RowKey "i:<sha256>"   an idempotency key → its job
//	PartitionKey "~active",     RowKey "<job id>"     a job the poller still works on
//
// A job and its idempotency key share a partition, so they are created in
// one transaction: a key never exists without its job, nor a job twice
// for one key. Tenant ids start with a letter, so "~active" is no tenant.
const DefaultJobsTable = "offpathbatchjobs"

const (
	jobPrefix       = "j:"
	keyRowPrefix    = "i:"
	activePartition = "~active"
	// docChunk is the size of one Edm.Binary property (at most 64 KiB);
	// maxDocChunks bounds a job's document (a row is at most 1 MiB).
	docChunk     = 60_000
	maxDocChunks = 15
)

// Jobs stores batch jobs.
type Jobs struct {
	t   table
	now func() time.Time
}

// NewJobs returns the job store on the named table (empty: DefaultJobsTable).
// now stamps index entries (nil: time.Now).
func NewJobs(svc *aztables.ServiceClient, tableName string, now func() time.Time) *Jobs {
	if now == nil {
		now = time.Now
	}
	return &Jobs{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultJobsTable))}, now: now}
}

// Create stores a new job and its idempotency key (if any) atomically.
func (s *Jobs) Create(ctx context.Context, j batch.Job, fingerprint string) (batch.Job, error) {
	if err := s.t.ensure(ctx); err != nil {
		return batch.Job{}, err
	}
	row, err := jobRow(j)
	if err != nil {
		return batch.Job{}, err
	}
	if j.IdempotencyKey == "" {
		res, err := s.t.client.AddEntity(ctx, row, nil)
		if err != nil {
			return batch.Job{}, fmt.Errorf("create job %s: %w", j.ID, err)
		}
		j.ETag = string(res.ETag)
		return j, nil
	}
	key, err := json.Marshal(map[string]any{
		"PartitionKey": j.Tenant, "RowKey": keyRowPrefix + keyHash(j.IdempotencyKey),
		"Kind": "idempotency", "Job": j.ID, "Fingerprint": fingerprint,
		"Created": j.Created.UTC(), "Created@odata.type": edmDateTime,
	})
	if err != nil {
		return batch.Job{}, fmt.Errorf("encode idempotency key: %w", err)
	}
	_, err = s.t.client.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: key},
		{ActionType: aztables.TransactionTypeAdd, Entity: row},
	}, nil)
	if err != nil {
		if isTransactionFailure(err) {
			if id, fp, ferr := s.FindKey(ctx, j.Tenant, j.IdempotencyKey); ferr == nil {
				return batch.Job{}, &batch.DuplicateError{JobID: id, Fingerprint: fp}
			}
		}
		return batch.Job{}, fmt.Errorf("create job %s: %w", j.ID, err)
	}
	return s.Get(ctx, j.Tenant, j.ID)
}

// FindKey returns the job holding a tenant's idempotency key.
func (s *Jobs) FindKey(ctx context.Context, tenantID, key string) (string, string, error) {
	res, err := s.t.client.GetEntity(ctx, tenantID, keyRowPrefix+keyHash(key), nil)
	if err != nil {
		if isNotFound(err) {
			return "", "", fmt.Errorf("idempotency key: %w", batch.ErrNotFound)
		}
		return "", "", fmt.Errorf("read idempotency key: %w", err)
	}
	var e struct{ Job, Fingerprint string }
	if err := json.Unmarshal(res.Value, &e); err != nil {
		return "", "", fmt.Errorf("decode idempotency key: %w", err)
	}
	return e.Job, e.Fingerprint, nil
}

// Get returns a tenant's job with its ETag.
func (s *Jobs) Get(ctx context.Context, tenantID, id string) (batch.Job, error) {
	if !batch.ValidJobID(id) {
		return batch.Job{}, fmt.Errorf("job %q: %w", id, batch.ErrNotFound)
	}
	res, err := s.t.client.GetEntity(ctx, tenantID, jobPrefix+id, nil)
	if err != nil {
		if isNotFound(err) {
			return batch.Job{}, fmt.Errorf("job %s: %w", id, batch.ErrNotFound)
		}
		return batch.Job{}, fmt.Errorf("read job %s: %w", id, err)
	}
	j, err := decodeJob(res.Value)
	if err != nil {
		return batch.Job{}, fmt.Errorf("job %s: %w", id, err)
	}
	if j.Tenant != tenantID {
		return batch.Job{}, fmt.Errorf("job %s: %w", id, batch.ErrNotFound)
	}
	j.ETag = string(res.ETag)
	return j, nil
}

// Update replaces a job if its ETag still matches.
func (s *Jobs) Update(ctx context.Context, j batch.Job) (batch.Job, error) {
	row, err := jobRow(j)
	if err != nil {
		return batch.Job{}, err
	}
	etag := azcore.ETag(j.ETag)
	res, err := s.t.client.UpdateEntity(ctx, row, &aztables.UpdateEntityOptions{IfMatch: &etag, UpdateMode: aztables.UpdateModeReplace})
	if err != nil {
		var re *azcore.ResponseError
		switch {
		case errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed:
			return batch.Job{}, fmt.Errorf("job %s: %w", j.ID, batch.ErrConflict)
		case isNotFound(err):
			return batch.Job{}, fmt.Errorf("job %s: %w", j.ID, batch.ErrNotFound)
		}
		return batch.Job{}, fmt.Errorf("update job %s: %w", j.ID, err)
	}
	j.ETag = string(res.ETag)
	return j, nil
}

// List returns up to limit of a tenant's jobs, newest first, after the
// job id after, in state (empty: any).
func (s *Jobs) List(ctx context.Context, tenantID string, state batch.State, after string, limit int) ([]batch.Job, error) {
	filter := "PartitionKey eq " + quote(tenantID) + " and RowKey lt 'j;'"
	if after != "" {
		filter += " and RowKey gt " + quote(jobPrefix+after)
	} else {
		filter += " and RowKey ge 'j:'"
	}
	if state != "" {
		filter += " and State eq " + quote(string(state))
	}
	top := int32(min(limit, 1000))
	out := []batch.Job{}
	if limit <= 0 {
		return out, nil
	}
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter, Top: &top}) {
		if err != nil {
			return nil, fmt.Errorf("list jobs of %s: %w", tenantID, err)
		}
		j, err := decodeJob(b)
		if err != nil {
			return nil, fmt.Errorf("list jobs of %s: %w", tenantID, err)
		}
		if out = append(out, j); len(out) == limit {
			break
		}
	}
	return out, nil
}

// Unfinished returns a tenant's jobs from newest to oldest (job ids, both
// included; ids sort newest first) that are not harvested, with their
// ETags: one range query over the tenant's partition, a page of up to
// 1,000 jobs at a time, the poll tick's read of many active jobs at once.
func (s *Jobs) Unfinished(ctx context.Context, tenantID, newest, oldest string) ([]batch.Job, error) {
	if !batch.ValidJobID(newest) || !batch.ValidJobID(oldest) {
		return nil, fmt.Errorf("unfinished jobs of %s: invalid range %q..%q", tenantID, newest, oldest)
	}
	filter := "PartitionKey eq " + quote(tenantID) + " and RowKey ge " + quote(jobPrefix+newest) +
		" and RowKey le " + quote(jobPrefix+oldest) + " and State ne " + quote(string(batch.Harvested))
	top := int32(1000)
	var out []batch.Job
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter, Top: &top}) {
		if err != nil {
			return nil, fmt.Errorf("unfinished jobs of %s: %w", tenantID, err)
		}
		j, err := decodeJob(b)
		if err != nil {
			return nil, fmt.Errorf("unfinished jobs of %s: %w", tenantID, err)
		}
		if j.Tenant != tenantID {
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

// Owners returns the tenant of each of ids that names a job: one query
// over the job rows, in every partition, whose ids lie between the least
// and the greatest of ids, reading their keys only. It scans the table,
// for the rare reader that knows a job's id and not its tenant (the
// audit, attributing the lines of a pack whose row is gone); ids made
// close together (a pack's members) keep the rows read few. An id found
// under two partitions is left out: it is nobody's for sure.
func (s *Jobs) Owners(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	var lo, hi string
	for _, id := range ids {
		if !batch.ValidJobID(id) {
			continue
		}
		if lo == "" || id < lo {
			lo = id
		}
		hi = max(hi, id)
	}
	if lo == "" {
		return out, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	filter := "RowKey ge " + quote(jobPrefix+lo) + " and RowKey le " + quote(jobPrefix+hi)
	sel := "PartitionKey,RowKey"
	twice := map[string]bool{}
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter, Select: &sel}) {
		if err != nil {
			return nil, fmt.Errorf("owners of jobs: %w", err)
		}
		var e struct{ PartitionKey, RowKey string }
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("owners of jobs: decode a row: %w", err)
		}
		id := strings.TrimPrefix(e.RowKey, jobPrefix)
		switch {
		case !want[id]:
		case out[id] != "" && out[id] != e.PartitionKey:
			twice[id] = true
		default:
			out[id] = e.PartitionKey
		}
	}
	for id := range twice {
		delete(out, id)
	}
	return out, nil
}

// CountByState counts every tenant's jobs by state. It reads the State
// column only (a projection over the job rows, not their documents), so a
// scrape costs one pass over the table's small properties. A table not
// created yet holds no jobs.
func (s *Jobs) CountByState(ctx context.Context) (map[string]int, error) {
	filter := "RowKey ge 'j:' and RowKey lt 'j;'"
	sel := "State"
	out := map[string]int{}
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter, Select: &sel}) {
		if err != nil {
			return nil, fmt.Errorf("count jobs by state: %w", err)
		}
		var e struct{ State string }
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("count jobs by state: decode a row: %w", err)
		}
		out[e.State]++
	}
	return out, nil
}

// MarkActive adds a job to the poller's index.
func (s *Jobs) MarkActive(ctx context.Context, tenantID, id string) error {
	if err := s.t.ensure(ctx); err != nil {
		return err
	}
	b, err := json.Marshal(map[string]any{"PartitionKey": activePartition, "RowKey": id, "Tenant": tenantID,
		"Since": s.now().UTC(), "Since@odata.type": edmDateTime})
	if err != nil {
		return fmt.Errorf("encode index entry: %w", err)
	}
	if _, err := s.t.client.UpsertEntity(ctx, b, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
		return fmt.Errorf("index job %s: %w", id, err)
	}
	return nil
}

// Unmark removes a job from the poller's index; an absent entry is fine.
func (s *Jobs) Unmark(ctx context.Context, id string) error {
	if _, err := s.t.client.DeleteEntity(ctx, activePartition, id, nil); err != nil && !isNotFound(err) {
		return fmt.Errorf("unindex job %s: %w", id, err)
	}
	return nil
}

// ListActive returns the poller's index: one partition query.
func (s *Jobs) ListActive(ctx context.Context) ([]batch.ActiveRef, error) {
	filter := "PartitionKey eq " + quote(activePartition)
	var out []batch.ActiveRef
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter}) {
		if err != nil {
			return nil, fmt.Errorf("list active jobs: %w", err)
		}
		var e struct {
			RowKey, Tenant string
			Since          time.Time
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("decode index entry: %w", err)
		}
		out = append(out, batch.ActiveRef{Tenant: e.Tenant, ID: e.RowKey, Since: e.Since})
	}
	return out, nil
}

// jobRow encodes a job: queryable fields as properties, the whole job as a
// JSON document in Edm.Binary chunks.
func jobRow(j batch.Job) ([]byte, error) {
	doc, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	if len(doc) > docChunk*maxDocChunks {
		return nil, fmt.Errorf("job %s: document of %d bytes exceeds a row", j.ID, len(doc))
	}
	row := map[string]any{
		"PartitionKey": j.Tenant, "RowKey": jobPrefix + j.ID, "Kind": "job",
		"State": string(j.State), "Alias": j.Alias, "Items": int64(j.Items), "Items@odata.type": edmInt64,
		"Created": j.Created.UTC(), "Created@odata.type": edmDateTime,
		"Updated": j.Updated.UTC(), "Updated@odata.type": edmDateTime,
	}
	row["Items"] = strconv.FormatInt(int64(j.Items), 10)
	for n := 0; len(doc) > 0; n++ {
		k := min(len(doc), docChunk)
		name := "Doc" + strconv.Itoa(n)
		row[name], row[name+"@odata.type"] = doc[:k], edmBinary // []byte encodes as base64
		doc = doc[k:]
	}
	return json.Marshal(row)
}

func decodeJob(b []byte) (batch.Job, error) {
	var props map[string]json.RawMessage
	if err := json.Unmarshal(b, &props); err != nil {
		return batch.Job{}, fmt.Errorf("decode job row: %w", err)
	}
	var doc []byte
	for n := 0; n < maxDocChunks; n++ {
		raw, ok := props["Doc"+strconv.Itoa(n)]
		if !ok {
			break
		}
		var chunk []byte
		if err := json.Unmarshal(raw, &chunk); err != nil {
			return batch.Job{}, fmt.Errorf("decode job document: %w", err)
		}
		doc = append(doc, chunk...)
	}
	var j batch.Job
	if err := json.Unmarshal(doc, &j); err != nil {
		return batch.Job{}, fmt.Errorf("decode job document: %w", err)
	}
	// A listed row carries its ETag (a point read's is in the response
	// headers, and overrides this).
	if raw, ok := props["odata.etag"]; ok {
		if err := json.Unmarshal(raw, &j.ETag); err != nil {
			return batch.Job{}, fmt.Errorf("decode job ETag: %w", err)
		}
	}
	return j, nil
}

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}
