package tickets_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tickets"
)

func TestCollector_Collect(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	put(t, c, map[string]string{
		"2026-03-14/a-export.jsonl": lines(
			`{"id":"T-1","subject":"Login fails","body":"Since Monday.","customer":"ACME","priority":"high","tags":["sso"]}`,
			`{"id":"T-2","body":"Invoice twice."}`,
			`{"id":"T-x","body":`,
			`{"subject":"no id","body":"b"}`,
			`{"id":"T-3","body":"`+strings.Repeat("x", 5<<20)+`"}`,
			`{"id":"T-4","body":"Refund please."}`,
		),
		"2026-03-14/b-T-5.json":    `{"id":"T-5","subject":"<script>alert(1)</script>","body":"Hostile subject."}`,
		"2026-03-14/c-T-1.json":    `{"id":"T-1","subject":"Login fails","body":"Since Monday, still."}`,
		"2026-03-14/d-again.jsonl": lines(`{"id":"T-2","body":"Invoice twice."}`),
		"2026-03-14/e-broken.json": `{"id": "T-6", "body": `,
		"2026-03-14/f-notes.txt":   "not a ticket",
		"2026-03-14/g-empty.json":  "",
		"2026-03-14/h-huge.json":   `{"id":"T-7","body":"b"}` + strings.Repeat(" ", tickets.MaxDocumentBytes),
		"2026-03-13/old.json":      `{"id":"T-old","body":"yesterday"}`,
		"2026-03-15/new.json":      `{"id":"T-new","body":"tomorrow"}`,
	})
	got := collect(t, c, newMemory(), tickets.Options{})

	if want := "T-1,T-2,T-4,T-5"; got.ids() != want {
		t.Errorf("yielded %q, want %q", got.ids(), want)
	}
	wantSkips := []tickets.Skip{
		{Blob: "2026-03-14/a-export.jsonl", Line: 3, Reason: "malformed JSON at byte 19"},
		{Blob: "2026-03-14/a-export.jsonl", Line: 4, Reason: "missing id"},
		{Blob: "2026-03-14/a-export.jsonl", Line: 5, ID: "T-3", Reason: "body too large (5.0 MiB of JSON; limit 256 KiB)"},
		{Blob: "2026-03-14/c-T-1.json", ID: "T-1", Reason: "duplicate id (different content); kept the first, in 2026-03-14/a-export.jsonl line 1"},
		{Blob: "2026-03-14/d-again.jsonl", Line: 1, ID: "T-2", Reason: "duplicate id (same content); kept the first, in 2026-03-14/a-export.jsonl line 2"},
		{Blob: "2026-03-14/e-broken.json", Reason: "malformed JSON at byte 22"},
		{Blob: "2026-03-14/f-notes.txt", Reason: "not a ticket file (want .json, .jsonl or .ndjson)"},
		{Blob: "2026-03-14/g-empty.json", Reason: "empty file"},
		{Blob: "2026-03-14/h-huge.json", Reason: "file too large for one ticket (over 8.0 MiB)"},
	}
	if len(got.res.Skipped) != len(wantSkips) {
		t.Fatalf("skipped %d: %+v\nwant %d", len(got.res.Skipped), got.res.Skipped, len(wantSkips))
	}
	for i, want := range wantSkips {
		if got.res.Skipped[i] != want {
			t.Errorf("skip %d = %+v\n         want %+v", i, got.res.Skipped[i], want)
		}
	}
	wantRes := tickets.Result{Prefix: "2026-03-14/", Files: 8, Tickets: 4, New: 4, Duplicates: 2, SkippedTotal: 9}
	got.res.Skipped = nil
	if fmt.Sprint(got.res) != fmt.Sprint(wantRes) {
		t.Errorf("Result = %+v, want %+v", got.res, wantRes)
	}

	t1 := got.tickets[0]
	if t1.Blob != "2026-03-14/a-export.jsonl" || t1.Line != 1 || t1.Customer != "ACME" || t1.Hash != tickets.Hash("Login fails", "Since Monday.") {
		t.Errorf("T-1 = %+v, want it from line 1 of a-export.jsonl with its customer and hash", t1)
	}
	if string(t1.Extra["priority"]) != `"high"` || string(t1.Extra["tags"]) != `["sso"]` {
		t.Errorf("T-1 Extra = %v, want priority and tags kept", t1.Extra)
	}
	if t5 := got.tickets[3]; t5.Subject != "<script>alert(1)</script>" || t5.Line != 0 {
		t.Errorf("T-5 = %+v, want the subject as written, from a whole-file ticket", t5)
	}
}

func TestCollector_NewChangedUnchanged(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	put(t, c, map[string]string{
		"2026-03-14/export.jsonl": lines(
			`{"id":"same","subject":"S","body":"unchanged text","customer":"moved to another account"}`,
			`{"id":"edited","subject":"S","body":"edited text"}`,
			`{"id":"fresh","body":"never seen"}`,
		),
	})
	seen := newMemory()
	seen.Record("same", tickets.Hash("S", "unchanged text"))
	seen.Record("edited", tickets.Hash("S", "the text before the edit"))
	seen.Record("elsewhere", tickets.Hash("", "a ticket of another day"))

	got := collect(t, c, seen, tickets.Options{})
	if want := "edited,fresh"; got.ids() != want {
		t.Errorf("first night yielded %q, want %q", got.ids(), want)
	}
	if got.res.Tickets != 3 || got.res.New != 2 || got.res.Unchanged != 1 || got.res.SkippedTotal != 0 {
		t.Errorf("first night Result = %+v, want 3 tickets, 2 new, 1 unchanged, none skipped", got.res)
	}

	// The control plane records what it submits; a re-run submits nothing.
	for _, tk := range got.tickets {
		seen.Record(tk.ID, tk.Hash)
	}
	again := collect(t, c, seen, tickets.Options{})
	if again.ids() != "" || again.res.Unchanged != 3 || again.res.New != 0 {
		t.Errorf("re-run yielded %q with %+v, want nothing new and 3 unchanged", again.ids(), again.res)
	}
}

func TestCollector_Empty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		blobs map[string]string
	}{
		{"empty container", nil},
		{"only other days", map[string]string{"2026-03-13/a.json": `{"id":"a","body":"b"}`, "2026-03-140.json": `{"id":"b","body":"b"}`}},
		{"folder marker", map[string]string{"2026-03-14/": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newContainer(t)
			put(t, c, tt.blobs)
			got := collect(t, c, newMemory(), tickets.Options{})
			want := tickets.Result{Prefix: "2026-03-14/"}
			if got.ids() != "" || fmt.Sprint(got.res) != fmt.Sprint(want) {
				t.Errorf("Collect = %q, %+v; want nothing", got.ids(), got.res)
			}
		})
	}
}

// TestCollector_Order mixes prefetched small files with large ones streamed
// inline, and checks that tickets come in name and line order regardless.
func TestCollector_Order(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	blobs := map[string]string{}
	var want []string
	for i := range 40 {
		name := fmt.Sprintf("2026-03-14/%03d", i)
		if i%7 == 3 { // about 4 KiB: above PrefetchBytes below
			var l []string
			for j := range 30 {
				id := fmt.Sprintf("L%03d-%02d", i, j)
				l = append(l, fmt.Sprintf(`{"id":%q,"body":%q}`, id, strings.Repeat("w ", 50)))
				want = append(want, id)
			}
			blobs[name+".jsonl"] = lines(l...)
			continue
		}
		id := fmt.Sprintf("S%03d", i)
		blobs[name+".json"] = fmt.Sprintf(`{"id":%q,"body":"short"}`, id)
		want = append(want, id)
	}
	put(t, c, blobs)
	for _, opts := range []tickets.Options{{}, {Concurrency: 3, PrefetchBytes: 1 << 10}, {Concurrency: 1, PrefetchBytes: 1}} {
		got := collect(t, c, newMemory(), opts)
		if got.ids() != strings.Join(want, ",") {
			t.Errorf("Options %+v: yielded\n%s\nwant\n%s", opts, got.ids(), strings.Join(want, ","))
		}
	}
}

func TestCollector_Errors(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	put(t, c, map[string]string{
		"2026-03-14/a.jsonl": lines(`{"id":"a","body":"b"}`, `{"id":"b","body":"b"}`, `{"id":"c","body":"b"}`),
	})
	full := errors.New("batch file full")
	down := errors.New("table storage down")
	tests := []struct {
		name      string
		seen      tickets.Summarised
		yieldErr  error
		cancel    bool
		wantErr   error
		wantCalls int
	}{
		{"yield error stops", newMemory(), full, false, full, 1},
		{"record error stops", failing{down}, nil, false, down, 0},
		{"cancelled", newMemory(), nil, true, context.Canceled, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			calls := 0
			_, err := tickets.NewCollector(blobstore.NewContainer(c), tt.seen, tickets.Options{}).Collect(ctx, day(), func(tickets.Ticket) error {
				calls++
				return tt.yieldErr
			})
			if !errors.Is(err, tt.wantErr) || calls != tt.wantCalls {
				t.Errorf("Collect = %v after %d yields, want %v after %d", err, calls, tt.wantErr, tt.wantCalls)
			}
		})
	}
}

// TestCollector_BlobDeletedWhileCollecting deletes a file after it was
// listed and before it is read: it is skipped, not an error.
func TestCollector_BlobDeletedWhileCollecting(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	// a is larger than what a download may run ahead (blank lines pad it),
	// so with one download at a time z is opened only after a was read.
	put(t, c, map[string]string{
		"2026-03-14/a.jsonl": lines(`{"id":"a","body":"b"}`, strings.Repeat(strings.Repeat(" ", 1023)+"\n", 3<<10)),
		"2026-03-14/z.json":  `{"id":"z","body":"b"}`,
	})
	seen := deleting{memory: newMemory(), delete: func(ctx context.Context) error {
		_, err := c.NewBlobClient("2026-03-14/z.json").Delete(ctx, nil)
		return err
	}}
	got := collect(t, c, seen, tickets.Options{Concurrency: 1, PrefetchBytes: 1})
	want := []tickets.Skip{{Blob: "2026-03-14/z.json", Reason: "deleted before it could be read"}}
	if got.ids() != "a" || fmt.Sprint(got.res.Skipped) != fmt.Sprint(want) {
		t.Errorf("Collect = %q, skipped %+v; want a, and z skipped as deleted", got.ids(), got.res.Skipped)
	}
}

// deleting is a record that deletes a blob at its first lookup.
type deleting struct {
	*memory
	delete func(context.Context) error
}

func (d deleting) Seen(ctx context.Context, id string) (string, bool, error) {
	if id == "a" {
		if err := d.delete(ctx); err != nil {
			return "", false, err
		}
	}
	return d.memory.Seen(ctx, id)
}

func TestDayPrefix(t *testing.T) {
	t.Parallel()
	berlin := time.FixedZone("CET", 3600)
	tests := []struct {
		name string
		day  time.Time
		want string
	}{
		{"utc", time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC), "2026-03-14/"},
		{"the day's own zone", time.Date(2026, 3, 14, 0, 30, 0, 0, berlin), "2026-03-14/"},
		{"same instant in utc", time.Date(2026, 3, 14, 0, 30, 0, 0, berlin).UTC(), "2026-03-13/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tickets.DayPrefix(tt.day); got != tt.want {
				t.Errorf("DayPrefix(%v) = %q, want %q", tt.day, got, tt.want)
			}
		})
	}
}

// failing is a Summarised whose store is down.
type failing struct{ err error }

func (f failing) Seen(context.Context, string) (string, bool, error) { return "", false, f.err }

// An account where the support system never dropped a ticket has no
// container at all: that is an empty day, not a failure.
func TestCollector_MissingContainerIsAnEmptyDay(t *testing.T) {
	t.Parallel()
	client, err := azblob.NewClientFromConnectionString(sharedAzurite(t).ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, client.ServiceClient().NewContainerClient(azurite.Name(t)), newMemory(), tickets.Options{})
	if len(got.tickets) != 0 || got.res.Files != 0 || got.res.Tickets != 0 || got.res.SkippedTotal != 0 || got.res.Prefix != "2026-03-14/" {
		t.Errorf("collect without a container = %+v, %+v; want an empty day", got.tickets, got.res)
	}
}
