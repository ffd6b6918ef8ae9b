package aoaisim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestClock_SpeedAndAdvance(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	real := start
	var mu sync.Mutex
	source := func() time.Time { mu.Lock(); defer mu.Unlock(); return real }
	step := func(d time.Duration) { mu.Lock(); real = real.Add(d); mu.Unlock() }

	c := newClockWithSource(start, 3600, source)
	step(time.Second)
	if got, want := c.Now(), start.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("after 1s at 3600x: Now = %v, want %v", got, want)
	}
	c.Advance(24 * time.Hour)
	if got, want := c.Now(), start.Add(25*time.Hour); !got.Equal(want) {
		t.Fatalf("after Advance: Now = %v, want %v", got, want)
	}
	c.SetSpeed(0)
	step(time.Hour)
	if got, want := c.Now(), start.Add(25*time.Hour); !got.Equal(want) {
		t.Fatalf("frozen clock moved: Now = %v, want %v", got, want)
	}
	c.SetSpeed(2 * MaxSpeed)
	if c.Speed() != MaxSpeed {
		t.Errorf("speed = %v, want clamped to %v", c.Speed(), MaxSpeed)
	}
}

func TestClock_WaitUntil(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		wake  func(c *Clock, wake chan struct{})
		speed float64
	}{
		{"advance", func(c *Clock, _ chan struct{}) { c.Advance(time.Hour) }, 0},
		{"wake", func(_ *Clock, wake chan struct{}) { wake <- struct{}{} }, 0},
		{"real time at high speed", func(*Clock, chan struct{}) {}, 1e5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewClock(start, tt.speed)
			wake := make(chan struct{}, 1)
			done := make(chan error, 1)
			go func() { done <- c.WaitUntil(context.Background(), start.Add(time.Minute), wake) }()
			tt.wake(c, wake)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("WaitUntil = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("WaitUntil did not return")
			}
		})
	}
	c := NewClock(start, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WaitUntil(ctx, start.Add(time.Hour), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitUntil with cancelled ctx = %v", err)
	}
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	l := newLimiter(0, 100)
	for i, tc := range []struct {
		at     time.Duration
		charge int64
		ok     bool
		retry  time.Duration
	}{
		{0, 40, true, 0},
		{10 * time.Second, 40, true, 0},
		{20 * time.Second, 40, false, 40 * time.Second}, // the first 40 leaves at t+60
		{59 * time.Second, 30, false, time.Second},
		{60 * time.Second, 40, true, 0},
		{61 * time.Second, 500, false, 60 * time.Second}, // larger than the limit: a whole window
	} {
		d := l.admit(t0.Add(tc.at), tc.charge)
		if d.allowed != tc.ok || (!tc.ok && d.retryAfter != tc.retry) {
			t.Errorf("step %d: allowed %v retry %v, want %v %v", i, d.allowed, d.retryAfter, tc.ok, tc.retry)
		}
		if !d.tokenLimited && !d.allowed {
			t.Errorf("step %d: refusal not attributed to tokens", i)
		}
	}
}

func TestComplete(t *testing.T) {
	t.Parallel()
	c := newCompleter()
	ticket := "# Ticket 1003\n\nThe printer on floor 4 prints only blank pages\nsince the update. We tried a new cartridge!\n\n" +
		"Is the driver to blame? The queue shows every job as done, Zürich office included."
	for _, source := range []string{ticket, "Some text.", "", strings.Repeat("a very long sentence without a stop ", 40)} {
		for seed := range uint64(200) {
			text, cut := c.complete(seed, 0, 0, source)
			n := TextTokens(text)
			if n > 48 || cut || !strings.HasPrefix(text, SimulatedPrefix) || !utf8.ValidString(text) {
				t.Fatalf("seed %d: %d tokens, cut %v, text %q", seed, n, cut, text)
			}
			if source == ticket {
				for _, s := range splitSentences(strings.TrimPrefix(text, SimulatedPrefix)) {
					if !strings.Contains(strings.ReplaceAll(ticket, "\n", " "), strings.TrimSuffix(s, ".")) {
						t.Fatalf("seed %d: %q is no sentence of the prompt (answer %q)", seed, s, text)
					}
				}
			}
			if again, _ := c.complete(seed, 0, 0, source); again != text {
				t.Fatalf("seed %d not deterministic", seed)
			}
			for _, limit := range []int{1, 2, 7, 12} {
				short, cut := c.complete(seed, 0, limit, source)
				if TextTokens(short) > limit || cut != (n > limit) || short == "" || !strings.HasPrefix(text, short) {
					t.Fatalf("seed %d limit %d: %q (%d tokens), cut %v; natural %q", seed, limit, short, TextTokens(short), cut, text)
				}
			}
		}
	}
	if got, _ := c.complete(1, 0, 0, "Customers may return any item\nwithin 30 days."); got != SimulatedPrefix+"Customers may return any item within 30 days." {
		t.Errorf("one-sentence prompt: %q", got)
	}
	want := []string{"Ticket 1003.", "The printer on floor 4 prints only blank pages since the update.", "We tried a new cartridge!",
		"Is the driver to blame?", "The queue shows every job as done, Zürich office included."}
	if got := splitSentences(ticket); !slices.Equal(got, want) {
		t.Errorf("sentences of the ticket = %q, want %q", got, want)
	}
}

func TestAdmissionGate(t *testing.T) {
	t.Parallel()
	g := newAdmissionGate()
	a, b, c := g.ticket(), g.ticket(), g.ticket()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.wait(ctx, c); err == nil {
		t.Fatal("ticket 3 admitted before 1 and 2 passed")
	}
	g.pass(b) // out of order: 3 still waits for 1
	g.pass(a)
	if err := g.wait(context.Background(), c); err != nil {
		t.Fatalf("wait after 1 and 2 passed: %v", err)
	}
}
