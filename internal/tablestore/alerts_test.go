package tablestore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/tablestore"
)

// TestAlerts_RecordList: alerts list newest first a page at a time, with
// their fields; those older than the retention are hidden and pruned as new
// ones are recorded; hostile text is stored as it is and a malformed cursor
// lists nothing.
func TestAlerts_RecordList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	svc := service(t)
	name := tableName(t, "alr")
	store := tablestore.NewAlerts(svc, name, 30*24*time.Hour, func() time.Time { return now })

	empty, next, err := store.List(ctx, "", 10)
	if err != nil || len(empty) != 0 || next != "" {
		t.Fatalf("List before any alert = %v, %q, %v", empty, next, err)
	}
	hostile := "x' or PartitionKey ne '' <script>alert(1)</script>"
	for i, a := range []alert.Alert{
		{Name: "batch_failed", Tenant: "contoso", Job: "j1", Message: "part 0 failed", Fields: map[string]any{"part": 0}, At: now.Add(-40 * 24 * time.Hour)},
		{Name: "batch_expired", Tenant: "contoso", Job: "j2", Message: hostile, At: now.Add(-2 * time.Hour)},
		{Name: "second_door", Message: strings.Repeat("é", 20_000), Fields: map[string]any{"batch": "batch_x", "bytes": 12}, At: now.Add(-time.Hour)},
		{Name: "held_too_long", Tenant: "fabrikam", Job: "j3", At: now},
	} {
		if err := store.Record(ctx, a); err != nil {
			t.Fatalf("Record %d: %v", i, err)
		}
	}
	page, next, err := store.List(ctx, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].Name != "held_too_long" || page[1].Name != "second_door" || next == "" {
		t.Fatalf("first page = %+v, next %q", page, next)
	}
	if !alert.ValidID(next) || page[1].Fields["batch"] != "batch_x" || page[1].Fields["bytes"] != float64(12) {
		t.Errorf("second_door recorded as %+v (cursor %q)", page[1], next)
	}
	if len(page[1].Message) > 17<<10 || !strings.HasSuffix(page[1].Message, "…") {
		t.Errorf("a 40 KB message is recorded as %d bytes", len(page[1].Message))
	}
	rest, next2, err := store.List(ctx, next, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || rest[0].Name != "batch_expired" || rest[0].Message != hostile || !rest[0].At.Equal(now.Add(-2*time.Hour)) || next2 != "" {
		t.Fatalf("second page = %+v, next %q: want batch_expired only (batch_failed is past the retention)", rest, next2)
	}
	if got, _, err := store.List(ctx, "1' or 'a' eq 'a", 10); err != nil || len(got) != 0 {
		t.Errorf("List with a hostile cursor = %v, %v; want nothing", got, err)
	}

	// The expired alert was pruned, not just hidden.
	all := tablestore.NewAlerts(svc, name, 365*24*time.Hour, func() time.Time { return now })
	if got, _, err := all.List(ctx, "", 10); err != nil || len(got) != 3 {
		t.Errorf("with a year's retention %d alerts remain (%v), want 3: the 40-day-old one pruned", len(got), err)
	}
}
