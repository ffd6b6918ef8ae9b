package tablestore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
)

func newDocuments(tb testing.TB) *tablestore.Documents {
	tb.Helper()
	return tablestore.NewDocuments(service(tb), tableName(tb, "doc"), nil)
}

func TestDocuments_PutGetList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newDocuments(t)
	if _, err := s.Get(ctx, "acme", "acme/a.txt"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	long := "acme/" + strings.Repeat("x", 1000) // names of any length and bytes hash to a valid key
	for _, name := range []string{"acme/a.txt", "acme/dir/b.md", long, "acme/new\nline.txt"} {
		st := document.Status{Tenant: "acme", Name: document.Printable(name), ETag: "0x1", State: document.Queued, Usage: ledger.Usage{PromptTokens: 7}}
		if _, err := s.Put(ctx, name, st); err != nil {
			t.Fatalf("Put(%q) = %v", name, err)
		}
		got, err := s.Get(ctx, "acme", name)
		if err != nil || got.Name != document.Printable(name) || got.State != document.Queued || got.Usage.PromptTokens != 7 || got.Version == "" || got.Updated.IsZero() {
			t.Errorf("Get(%q) = %+v, %v", name, got, err)
		}
	}
	if _, err := s.Put(ctx, "../x", document.Status{Name: "../x", State: document.Rejected, Reason: "invalid blob name"}); err != nil {
		t.Fatalf("Put(unattributed) = %v", err)
	}
	if got, err := s.Get(ctx, document.Unattributed, "../x"); err != nil || got.Reason != "invalid blob name" {
		t.Errorf("Get(unattributed) = %+v, %v", got, err)
	}
	list, err := s.List(ctx, "acme", 10)
	if err != nil || len(list) != 4 {
		t.Errorf("List = %d statuses, %v; want 4", len(list), err)
	}
	if list, err := s.List(ctx, "acme", 2); err != nil || len(list) != 2 {
		t.Errorf("List(limit 2) = %d statuses, %v", len(list), err)
	}
}

func TestDocuments_UpdateIsGuarded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newDocuments(t)
	const name = "acme/c.txt"
	// Concurrent updates each add one: none is lost.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, err := s.Update(ctx, "acme", name, func(st *document.Status, found bool) (bool, error) {
				if !found {
					*st = document.Status{Tenant: "acme", Name: name, State: document.Processing}
				}
				st.Usage.Requests++
				return true, nil
			})
			if err != nil {
				t.Errorf("Update = %v", err)
			}
		})
	}
	wg.Wait()
	got, err := s.Get(ctx, "acme", name)
	if err != nil || got.Usage.Requests != 4 {
		t.Fatalf("after 4 concurrent updates: %+v, %v; want 4 requests", got.Usage, err)
	}
	// Declining writes nothing; a wrong partition is refused.
	before := got.Version
	got, err = s.Update(ctx, "acme", name, func(st *document.Status, found bool) (bool, error) { return false, nil })
	if err != nil || got.Version != before {
		t.Errorf("declined Update = %+v, %v", got, err)
	}
	if _, err := s.Update(ctx, "acme", name, func(st *document.Status, found bool) (bool, error) {
		st.Tenant = "other"
		return true, nil
	}); err == nil {
		t.Error("Update moving a status to another tenant succeeded")
	}
}

// TestDocuments_Page: pages follow one another through their cursors
// without a status lost or repeated, filtered by partition and state, and a
// cursor nobody made is ErrBadCursor.
func TestDocuments_Page(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newDocuments(t)
	want := map[string]bool{}
	for i := range 7 {
		name := fmt.Sprintf("acme/%02d.txt", i)
		state := document.Done
		if i%3 == 0 {
			state = document.DeadLettered
		}
		if _, err := s.Put(ctx, name, document.Status{Tenant: "acme", Name: name, State: state}); err != nil {
			t.Fatal(err)
		}
		want[name] = true
	}
	if _, err := s.Put(ctx, "bravo/x.txt", document.Status{Tenant: "bravo", Name: "bravo/x.txt", State: document.DeadLettered}); err != nil {
		t.Fatal(err)
	}
	seen, cursor, pages := map[string]bool{}, "", 0
	for {
		page, next, err := s.Page(ctx, "acme", "", cursor, 3)
		if err != nil || len(page) > 3 {
			t.Fatalf("Page = %d, %v", len(page), err)
		}
		pages++
		for _, st := range page {
			if seen[st.Name] {
				t.Errorf("%s listed twice", st.Name)
			}
			seen[st.Name] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != len(want) || pages != 3 {
		t.Errorf("pages listed %d statuses in %d pages, want %d in 3", len(seen), pages, len(want))
	}
	dead, _, err := s.Page(ctx, "acme", document.DeadLettered, "", 100)
	if err != nil || len(dead) != 3 {
		t.Errorf("dead-lettered of acme = %d, %v; want 3", len(dead), err)
	}
	all, _, err := s.Page(ctx, "", document.DeadLettered, "", 100)
	if err != nil || len(all) != 4 {
		t.Errorf("dead-lettered of every tenant = %d, %v; want 4", len(all), err)
	}
	for _, bad := range []string{"!!", "bm90IGEgY3Vyc29y", strings.Repeat("A", 500), "YWNtZQpkLSc="} {
		if _, _, err := s.Page(ctx, "acme", "", bad, 3); !errors.Is(err, document.ErrBadCursor) {
			t.Errorf("Page(cursor %.20q) = %v, want ErrBadCursor", bad, err)
		}
	}
}
