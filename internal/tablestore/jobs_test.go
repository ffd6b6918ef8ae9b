package tablestore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/tablestore"
)

func newJob(t *testing.T, tenantID string, at time.Time, key string) batch.Job {
	t.Helper()
	id, err := batch.NewJobID(at, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return batch.Job{ID: id, Tenant: tenantID, Alias: "summarize", State: batch.Accepted, Created: at, Updated: at, Items: 1,
		IdempotencyKey: key, Parts: []batch.Part{{Index: 0, Status: batch.PartPending, Lines: 1}}}
}

func TestJobs_CreateGetUpdate(t *testing.T) {
	t.Parallel()
	s := tablestore.NewJobs(service(t), tableName(t, "job"), nil)
	ctx := context.Background()
	now := time.Now().UTC()
	j, err := s.Create(ctx, newJob(t, "contoso", now, "nightly"), "fp1")
	if err != nil {
		t.Fatal(err)
	}
	// The same key again: the first job, named, and nothing new stored.
	dup := newJob(t, "contoso", now, "nightly")
	var de *batch.DuplicateError
	if _, err := s.Create(ctx, dup, "fp2"); !errors.As(err, &de) || de.JobID != j.ID || de.Fingerprint != "fp1" {
		t.Fatalf("second Create with the key = %v, want a DuplicateError naming %s", err, j.ID)
	}
	if _, err := s.Get(ctx, "contoso", dup.ID); !errors.Is(err, batch.ErrNotFound) {
		t.Errorf("the duplicate was stored: %v", err)
	}
	// Another tenant's key space is its own; its reads never see contoso's jobs.
	if _, err := s.Create(ctx, newJob(t, "fabrikam", now, "nightly"), "fp1"); err != nil {
		t.Errorf("the same key for another tenant: %v", err)
	}
	if _, err := s.Get(ctx, "fabrikam", j.ID); !errors.Is(err, batch.ErrNotFound) {
		t.Errorf("fabrikam reading contoso's job: %v, want ErrNotFound", err)
	}
	// A document bigger than one property (60 KB) round-trips.
	j.Metadata = map[string]string{"note": strings.Repeat("é", 40_000)}
	for i := range 40 {
		j.Parts = append(j.Parts, batch.Part{Index: i + 1, InputBlob: strings.Repeat("x", 1000)})
	}
	stale := j
	if j, err = s.Update(ctx, j); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "contoso", j.ID)
	if err != nil || len(got.Parts) != 41 || got.Metadata["note"] != j.Metadata["note"] || got.ETag != j.ETag {
		t.Fatalf("Get after Update: %d parts, %v", len(got.Parts), err)
	}
	if _, err := s.Update(ctx, stale); !errors.Is(err, batch.ErrConflict) {
		t.Errorf("Update with a stale ETag = %v, want ErrConflict", err)
	}
}

func TestJobs_ListAndIndex(t *testing.T) {
	t.Parallel()
	s := tablestore.NewJobs(service(t), tableName(t, "job"), nil)
	ctx := context.Background()
	base := time.Now().UTC()
	var ids []string
	for i := range 5 {
		j := newJob(t, "contoso", base.Add(time.Duration(i)*time.Second), "")
		if i%2 == 0 {
			j.State = batch.Held
		}
		if _, err := s.Create(ctx, j, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkActive(ctx, "contoso", j.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	page, err := s.List(ctx, "contoso", "", "", 3)
	if err != nil || len(page) != 3 || page[0].ID != ids[4] || page[2].ID != ids[2] {
		t.Fatalf("first page: %v %v", len(page), err)
	}
	rest, err := s.List(ctx, "contoso", "", page[2].ID, 3)
	if err != nil || len(rest) != 2 || rest[0].ID != ids[1] {
		t.Errorf("second page: %d %v", len(rest), err)
	}
	held, err := s.List(ctx, "contoso", batch.Held, "", 10)
	if err != nil || len(held) != 3 {
		t.Errorf("held jobs: %d %v", len(held), err)
	}
	active, err := s.ListActive(ctx)
	if err != nil || len(active) != 5 {
		t.Fatalf("active: %d %v", len(active), err)
	}
	if err := s.Unmark(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Unmark(ctx, ids[0]); err != nil {
		t.Errorf("Unmark twice: %v", err)
	}
	if active, _ := s.ListActive(ctx); len(active) != 4 {
		t.Errorf("active after Unmark: %d", len(active))
	}
}

// TestJobs_Owners finds the tenants of jobs known by id alone, across
// partitions: each of the ids asked for that names a job, not the jobs
// between them not asked for, nor an id that names none; an id two
// tenants hold is nobody's.
func TestJobs_Owners(t *testing.T) {
	t.Parallel()
	s := tablestore.NewJobs(service(t), tableName(t, "own"), nil)
	ctx := context.Background()
	if got, err := s.Owners(ctx, []string{"0000000000aaaaa"}); err != nil || len(got) != 0 {
		t.Fatalf("Owners before the table exists = %v, %v", got, err)
	}
	base := time.Now().UTC()
	var made []batch.Job
	for i, tenantID := range []string{"contoso", "fabrikam", "contoso", "litware", "fabrikam"} {
		j := newJob(t, tenantID, base.Add(time.Duration(i)*time.Second), "")
		if _, err := s.Create(ctx, j, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkActive(ctx, tenantID, j.ID); err != nil {
			t.Fatal(err)
		}
		made = append(made, j)
	}
	twin := made[1]
	twin.Tenant = "northwind"
	if _, err := s.Create(ctx, twin, ""); err != nil {
		t.Fatal(err)
	}
	missing := newJob(t, "contoso", base.Add(2500*time.Millisecond), "")
	got, err := s.Owners(ctx, []string{made[0].ID, made[1].ID, made[4].ID, missing.ID, "not-a-job-id"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{made[0].ID: "contoso", made[4].ID: "fabrikam"}
	if !maps.Equal(got, want) {
		t.Errorf("Owners = %v, want %v (not %s, held by two tenants, nor the jobs between, nor %s, which is none)", got, want, made[1].ID, missing.ID)
	}
}

// TestJobs_Unfinished reads a tenant's jobs in an id range, both ends
// included, without the harvested ones and without another tenant's, each
// with an ETag that a conditional update accepts.
func TestJobs_Unfinished(t *testing.T) {
	t.Parallel()
	s := tablestore.NewJobs(service(t), tableName(t, "job"), nil)
	ctx := context.Background()
	base := time.Now().UTC()
	var ids []string // oldest first
	for i := range 6 {
		j := newJob(t, "contoso", base.Add(time.Duration(i)*time.Second), "")
		if i == 2 {
			j.State = batch.Harvested
		}
		if _, err := s.Create(ctx, j, ""); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	other := newJob(t, "fabrikam", base.Add(3*time.Second), "")
	if _, err := s.Create(ctx, other, ""); err != nil {
		t.Fatal(err)
	}
	// ids sort newest first: the range from ids[4] down to ids[1].
	got, err := s.Unfinished(ctx, "contoso", ids[4], ids[1])
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, j := range got {
		gotIDs = append(gotIDs, j.ID)
	}
	if want := []string{ids[4], ids[3], ids[1]}; fmt.Sprint(gotIDs) != fmt.Sprint(want) {
		t.Fatalf("Unfinished = %v, want %v (newest first, the harvested one left out)", gotIDs, want)
	}
	if got[0].ETag == "" {
		t.Fatal("a listed job has no ETag")
	}
	j := got[0]
	j.Items = 7
	if _, err := s.Update(ctx, j); err != nil {
		t.Errorf("Update with the listed ETag: %v", err)
	}
	if _, err := s.Update(ctx, j); !errors.Is(err, batch.ErrConflict) {
		t.Errorf("Update with the listed ETag, twice: %v, want ErrConflict", err)
	}
	if one, err := s.Unfinished(ctx, "contoso", ids[5], ids[5]); err != nil || len(one) != 1 || one[0].ID != ids[5] {
		t.Errorf("a range of one: %+v %v", one, err)
	}
	if _, err := s.Unfinished(ctx, "contoso", "x' or true", ids[0]); err == nil {
		t.Error("a range that is no job id: no error")
	}
}

// TestJobs_CountByState counts every tenant's jobs by state from the State
// column alone: idempotency keys and the poller's index are not jobs, an
// update moves a job between states, and a table not created yet holds
// none.
func TestJobs_CountByState(t *testing.T) {
	t.Parallel()
	var queries []string
	var mu sync.Mutex
	record := policyFunc(func(req *policy.Request) (*http.Response, error) {
		if req.Raw().Method == http.MethodGet {
			mu.Lock()
			queries = append(queries, req.Raw().URL.Query().Get("$select"))
			mu.Unlock()
		}
		return req.Next()
	})
	svc, err := aztables.NewServiceClientFromConnectionString(sharedAzurite(t).ConnectionString(),
		&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{record}}})
	if err != nil {
		t.Fatal(err)
	}
	s := tablestore.NewJobs(svc, tableName(t, "job"), nil)
	ctx := context.Background()
	if got, err := s.CountByState(ctx); err != nil || len(got) != 0 {
		t.Fatalf("CountByState before the table exists = %v, %v; want none", got, err)
	}
	now := time.Now().UTC()
	states := map[string][]batch.State{"contoso": {batch.Held, batch.Held, batch.Accepted}, "fabrikam": {batch.Accepted, batch.Harvested}}
	var moved batch.Job
	for tenantID, ss := range states {
		for i, st := range ss {
			j := newJob(t, tenantID, now.Add(time.Duration(i)*time.Second), fmt.Sprintf("key-%d", i)) // an idempotency row each
			j.State = st
			j.Metadata = map[string]string{"note": strings.Repeat("x", 70_000)} // a document of two chunks
			created, err := s.Create(ctx, j, "fp")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.MarkActive(ctx, tenantID, j.ID); err != nil {
				t.Fatal(err)
			}
			if st == batch.Held {
				moved = created
			}
		}
	}
	want := map[string]int{"held": 2, "accepted": 2, "harvested": 1}
	if got, err := s.CountByState(ctx); err != nil || !maps.Equal(got, want) {
		t.Fatalf("CountByState = %v, %v; want %v", got, err, want)
	}
	moved.State = batch.Submitted
	if _, err := s.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	want = map[string]int{"held": 1, "submitted": 1, "accepted": 2, "harvested": 1}
	if got, err := s.CountByState(ctx); err != nil || !maps.Equal(got, want) {
		t.Errorf("CountByState after an update = %v, %v; want %v", got, err, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if last := queries[len(queries)-1]; last != "State" {
		t.Errorf("the count's query selects %q, want the State column only", last)
	}
}

type policyFunc func(*policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }
