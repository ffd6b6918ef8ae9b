package ratelimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/testing/poll"
)

// While a capped user (the batch deadline fallback) keeps asking for more
// than its share, the deployment's other users (document ingestion) still
// get the rest of every window, and the capped one never more than its
// fraction.
func TestCapped_LeavesTheRestToThePrimaryUsers(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	opts := ratelimit.Options{Window: time.Minute, Burst: -1, Clock: clock}
	set, err := ratelimit.NewSet(map[string]ratelimit.Limits{"gpt": {TPM: 1000}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	capped, err := ratelimit.NewCapped(set, 0.25, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := capped.Limits("gpt"); got.TPM != 250 {
		t.Fatalf("cap %+v, want 250 TPM", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var fallback atomic.Int64
	for range 10 { // the fallback asks for far more than its share
		go func() {
			for capped.Wait(ctx, "gpt", 100) == nil {
				fallback.Add(1)
			}
		}()
	}
	poll.Until(t, 5*time.Second, "the fallback's share admitted", func() bool { return fallback.Load() == 2 })

	// Ingestion's requests all fit in the same window, beside the fallback.
	done := make(chan error, 7)
	for range 7 {
		go func() { done <- set.Wait(ctx, "gpt", 100) }()
	}
	for range 7 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := fallback.Load(); n != 2 {
		t.Fatalf("the fallback got %d requests in the window, want its 2", n)
	}
	// The next window: the fallback takes its share again, no more.
	clock.Advance(time.Minute)
	poll.Until(t, 5*time.Second, "the fallback's next share", func() bool { return fallback.Load() == 4 })
	go func() { done <- set.Wait(ctx, "gpt", 700) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := fallback.Load(); n != 4 {
		t.Fatalf("the fallback got %d requests in two windows, want 4", n)
	}
}
