package tablestore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
)

func newAudit(tb testing.TB) *tablestore.Audit {
	tb.Helper()
	return tablestore.NewAudit(service(tb), tableName(tb, "aud"))
}

func TestAudit_LoadWithoutTable(t *testing.T) {
	t.Parallel()
	got, err := newAudit(t).Load(context.Background(), audit.KindBatch)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Load on a table never written = %v, %v; want an empty map", got, err)
	}
}

func TestAudit_RoundTripByKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newAudit(t)
	b := audit.Record{Kind: audit.KindBatch, ID: "batch_5e1c0d4a-8f0b-4c77-9f1e-0a2b3c4d5e6f", AlertedAt: t0, CreatedAt: t0.Add(-time.Hour),
		Status: "in_progress", InputFileID: "file-in", OutputFileID: "file-out", ErrorFileID: "file-err"}
	f := audit.Record{Kind: audit.KindFile, ID: "file-0123456789abcdef", AlertedAt: t0, CreatedAt: t0.Add(-2 * time.Hour),
		Filename: "stray.jsonl", Purpose: "batch", Bytes: 5_000_000_000}
	for _, r := range []audit.Record{b, f} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatalf("Put(%s): %v", r.ID, err)
		}
	}
	for _, c := range []struct {
		kind audit.Kind
		want audit.Record
	}{{audit.KindBatch, b}, {audit.KindFile, f}} {
		got, err := s.Load(ctx, c.kind)
		if err != nil {
			t.Fatalf("Load(%s): %v", c.kind, err)
		}
		if len(got) != 1 || got[c.want.ID] != c.want {
			t.Errorf("Load(%s) = %+v\nwant only %+v", c.kind, got, c.want)
		}
	}
}

func TestAudit_PutReplaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newAudit(t)
	r := audit.Record{Kind: audit.KindBatch, ID: "batch_1", AlertedAt: t0, Status: "in_progress", InputFileID: "file-in"}
	if err := s.Put(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Status, r.OutputFileID, r.BookedAt = "completed", "file-out", t0.Add(time.Hour)
	r.Alias, r.Deployment, r.Note = "summarize", "gpt-4o-mini-batch", "error file file-err is gone: its usage is unknown"
	r.Usage = ledger.Usage{PromptTokens: 3_000_000_000, CompletionTokens: 20, CachedTokens: 1, ReasoningTokens: 2, Requests: 4, Refusals: 1, Cost: 987_654}
	if err := s.Put(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, audit.KindBatch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[r.ID] != r {
		t.Errorf("after a second Put: %+v\nwant only %+v", got, r)
	}
}

func TestAudit_ManyRecordsPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newAudit(t)
	const n = 1_010 // more than one page of 1,000
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- s.Put(ctx, audit.Record{Kind: audit.KindFile, ID: fmt.Sprintf("file-%05d", i), AlertedAt: t0})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Load(ctx, audit.KindFile)
	if err != nil || len(got) != n {
		t.Fatalf("Load = %d records, %v; want %d", len(got), err, n)
	}
}

func TestAudit_PutRefuses(t *testing.T) {
	t.Parallel()
	s := newAudit(t)
	for _, c := range []struct {
		name string
		r    audit.Record
	}{
		{"NoKind", audit.Record{ID: "batch_1"}},
		{"OtherKind", audit.Record{Kind: "job", ID: "batch_1"}},
		{"NoID", audit.Record{Kind: audit.KindFile}},
		{"Slash", audit.Record{Kind: audit.KindFile, ID: "file/1"}},
		{"Control", audit.Record{Kind: audit.KindFile, ID: "file\n1"}},
	} {
		if err := s.Put(context.Background(), c.r); err == nil {
			t.Errorf("%s: Put(%+v) = nil, want an error", c.name, c.r)
		}
	}
}
