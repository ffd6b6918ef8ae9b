package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/reconcile"
	"github.com/offpath/offpath/internal/tablestore"
)

// TestReconcile_Watermark: a missed timer firing skips no hour: the next
// run compares every final hour since the watermark, once, and a run that
// finds nothing new compares nothing; a long outage is caught up at most
// MaxHours back; the watermark is written only if no other run moved it.
func TestReconcile_Watermark(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	wm := tablestore.NewWatermark(e.svc, "rwm"+azurite.Suffix(), "reconcile")
	o := e.opts
	o.Watermark, o.MaxHours = wm, 4
	rec, err := reconcile.New(o)
	if err != nil {
		t.Fatal(err)
	}
	run := func(at time.Time) map[time.Time][]reconcile.Period {
		t.Helper()
		e.clock.Advance(at.Sub(e.clock.Now()))
		ps, err := rec.Run(ctx)
		if err != nil {
			t.Fatalf("Run at %s: %v", at.Format("15:04"), err)
		}
		byHour := map[time.Time][]reconcile.Period{}
		for _, p := range ps {
			byHour[p.To.Add(-time.Hour)] = append(byHour[p.To.Add(-time.Hour)], p)
		}
		return byHour
	}
	h := func(n int) time.Time { return e.hour.Add(time.Duration(n) * time.Hour) } // h(0) is 10:00
	settled := reconcile.DefaultSettle + time.Minute

	embed, chat := e.calls(3) // 10:05, through offpath
	e.meter(embedDep, embed)
	e.meter(chatDep, chat)
	e.clock.Advance(time.Hour) // 11:05: a second door on the chat deployment
	for range 20 {
		e.calls(0)
	}

	// The first run, with no watermark, compares the latest final hour.
	got := run(h(1).Add(settled))
	if len(got) != 1 || len(got[h(0)]) != 2 || got[h(0)][0].Drift || got[h(0)][1].Drift {
		t.Fatalf("first run compared %+v, want 10:00's two deployments without drift", got)
	}
	if next, _, err := wm.Load(ctx); err != nil || !next.Equal(h(1)) {
		t.Fatalf("watermark = %v, %v; want 11:00", next, err)
	}

	// The firings at 12:21 and 13:21 are missed; 14:21 compares 11:00,
	// 12:00 and 13:00, and finds 11:00's drift.
	got = run(h(4).Add(settled))
	if ps := got[h(1)]; len(ps) != 1 || ps[0].Deployment != chatDep || !ps[0].Drift {
		t.Errorf("11:00 compared as %+v, want the chat deployment's drift", ps)
	}
	for hour := range got {
		if hour.Before(h(1)) || hour.After(h(3)) {
			t.Errorf("compared %s again or too early", hour.Format("15:04"))
		}
	}
	if n := len(e.alerts.Named(reconcile.AlertDrift)); n != 1 {
		t.Errorf("%d drift alerts, want 1", n)
	}
	if next, _, _ := wm.Load(ctx); !next.Equal(h(4)) {
		t.Errorf("watermark = %v, want 14:00", next)
	}
	// Another run in the same hour has nothing new to compare.
	if got = run(h(4).Add(settled + 10*time.Minute)); len(got) != 0 {
		t.Errorf("a second run in the hour compared %+v", got)
	}
	if n := len(e.alerts.Named(reconcile.AlertDrift)); n != 1 {
		t.Errorf("%d drift alerts after a repeated run, want still 1", n)
	}

	// Ten hours down: one run compares the last MaxHours (4), skipping
	// 15:00's traffic, and moves on.
	for _, hour := range []int{5, 13} { // 15:30 and 23:30
		e.clock.Advance(h(hour).Add(30 * time.Minute).Sub(e.clock.Now()))
		e.calls(0)
	}
	got = run(h(14).Add(settled))
	if _, ok := got[h(13)]; len(got) != 1 || !ok {
		t.Errorf("catch-up compared %+v, want only 23:00's traffic", got)
	}
	if next, _, _ := wm.Load(ctx); !next.Equal(h(14)) {
		t.Errorf("watermark = %v after the catch-up, want %v", next, h(14))
	}

	// A run whose watermark another run moved does not overwrite it.
	_, version, err := wm.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wm.Save(ctx, h(15), version); err != nil {
		t.Fatal(err)
	}
	if _, err := wm.Save(ctx, h(16), version); !errors.Is(err, reconcile.ErrConflict) {
		t.Errorf("Save with a stale version = %v, want ErrConflict", err)
	}
	if next, _, _ := wm.Load(ctx); !next.Equal(h(15)) {
		t.Errorf("watermark = %v, want the first writer's %v", next, h(15))
	}
}
