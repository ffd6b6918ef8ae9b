package blobwatch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/local/azurite"
)

func TestScan_PoisonsAfterMaxTries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{HostID: "poison-host"})
	p := e.pattern(t, "{name}")
	etag := e.put(t, "bad.json", "{", nil)
	e.put(t, "good.json", "{}", nil)
	r := recorder{fail: func(b Blob) error {
		if b.Name == "bad.json" {
			return errors.New("malformed")
		}
		return nil
	}}

	for i := 1; i <= 5; i++ {
		st := scan(t, w, "Parse", p, &r)
		if st.Failed != 1 || st.Poisoned != min(1, i/5) {
			t.Fatalf("scan %d: stats %+v", i, st)
		}
		if msgs := e.poisonMessagesIfAny(t); len(msgs) != i/5 {
			t.Fatalf("after scan %d: %d poison messages", i, len(msgs))
		}
	}
	var attempts []int
	for _, b := range r.all() {
		if b.Name == "bad.json" {
			attempts = append(attempts, b.Attempt)
		}
	}
	if !slices.Equal(attempts, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("bad.json attempts %v, want 1..5", attempts)
	}
	msgs := e.poisonMessages(t)
	want := poisonMessage{Type: "BlobTrigger", FunctionID: "Host.Functions.Parse", BlobType: "BlockBlob",
		ContainerName: e.container, BlobName: "bad.json", ETag: strings.Trim(etag, `"`)}
	if len(msgs) != 1 || msgs[0] != want {
		t.Fatalf("poison messages %+v, want [%+v]", msgs, want)
	}

	// Poisoned: no more tries, no more messages.
	before := len(r.all())
	scan(t, w, "Parse", p, &r)
	scan(t, w, "Parse", p, &r)
	if len(r.all()) != before || len(e.poisonMessages(t)) != 1 {
		t.Fatalf("poisoned blob was retried: %d calls, was %d", len(r.all()), before)
	}
	// A new version is a new blob to the trigger.
	e.put(t, "bad.json", "{}", nil)
	r.fail = nil
	scan(t, w, "Parse", p, &r)
	if last := r.all()[len(r.all())-1]; last.Name != "bad.json" || last.Attempt != 1 {
		t.Fatalf("new version: last call %+v", last)
	}
}

// poisonMessagesIfAny is poisonMessages, with a missing queue read as empty.
func (e env) poisonMessagesIfAny(t *testing.T) []poisonMessage {
	t.Helper()
	if _, err := e.queues.NewQueueClient(poisonQueue).GetProperties(context.Background(), nil); err != nil {
		return nil
	}
	return e.poisonMessages(t)
}

func TestScan_ReceiptsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := envOn(t, azurite.StartIn(t, dir), azurite.Name(t))
	p := e.pattern(t, "{name}")
	e.put(t, "done.txt", "ok", nil)
	e.put(t, "flaky.txt", "no", nil)
	r := recorder{fail: func(b Blob) error {
		if b.Name == "flaky.txt" {
			return errors.New("downstream unavailable")
		}
		return nil
	}}
	w := e.watcher(Options{})
	scan(t, w, "Ingest", p, &r)
	scan(t, w, "Ingest", p, &r)
	e.az.Stop()

	again := envOn(t, azurite.StartIn(t, dir), e.container)
	var after recorder
	scan(t, again.watcher(Options{}), "Ingest", p, &after)
	got := after.all()
	if len(got) != 1 || got[0].Name != "flaky.txt" || got[0].Attempt != 3 {
		t.Fatalf("after restart: calls %+v, want only flaky.txt at attempt 3", got)
	}
}

func TestScan_ShutdownIsNotATry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{})
	p := e.pattern(t, "{name}")
	e.put(t, "a", "a", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := w.Scan(ctx, "Ingest", p, func(ctx context.Context, _ Blob) error {
		cancel()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Scan error %v, want context.Canceled", err)
	}
	var r recorder
	scan(t, w, "Ingest", p, &r)
	if got := r.all(); len(got) != 1 || got[0].Attempt != 1 {
		t.Fatalf("after an interrupted try: %+v, want attempt 1 again", got)
	}
}
