package tablestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/offpath/offpath/internal/testing/ratelimittest"
)

const leaseDeployment = "gpt-4o-mini"

var leaseQuota = ratelimit.Limits{TPM: 60_000, RPM: 360}

// leaseOpts are the fleet's defaults on a manual clock.
func leaseOpts(id string, clock ratelimit.Clock) ratelimit.FleetOptions {
	return ratelimit.FleetOptions{ID: id, Clock: clock, Pause: func(time.Duration) {}}
}

// instance is one process's limiter and fleet.
type instance struct {
	lim   *ratelimit.Limiter
	fleet *ratelimit.Fleet
}

func newInstance(t *testing.T, store ratelimit.LeaseStore, id string, clock ratelimit.Clock, static ratelimit.Limits, logger zerolog.Logger) *instance {
	t.Helper()
	// A one-minute window, so that the times below are round.
	set, err := ratelimit.NewSet(map[string]ratelimit.Limits{leaseDeployment: static}, ratelimit.Options{Window: time.Minute, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	f, err := ratelimit.NewFleet(set, map[string]ratelimit.Limits{leaseDeployment: leaseQuota}, map[string]ratelimit.Limits{leaseDeployment: static}, store, leaseOpts(id, clock), logger)
	if err != nil {
		t.Fatal(err)
	}
	return &instance{lim: set.Limiter(leaseDeployment), fleet: f}
}

func (in *instance) renew(t *testing.T) {
	t.Helper()
	if err := in.fleet.Renew(context.Background()); err != nil {
		t.Fatalf("Renew: %v", err)
	}
}

// pooled sums what the pool gives out and keeps cooling.
func pooled(t *testing.T, store *tablestore.RateLimits) (given, cooling ratelimit.Limits, members int) {
	t.Helper()
	p, _, err := store.Load(context.Background(), leaseDeployment)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Members {
		given.TPM += m.TPM
		given.RPM += m.RPM
	}
	for _, c := range p.Cooling {
		cooling.TPM += c.TPM
		cooling.RPM += c.RPM
	}
	return given, cooling, len(p.Members)
}

func TestRateLimits_SaveIsGuardedByTheETag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := tablestore.NewRateLimits(service(t), tableName(t, "rl"))
	p, version, err := store.Load(ctx, leaseDeployment)
	if err != nil || version != "" || len(p.Members) != 0 {
		t.Fatalf("Load of nothing = %+v, %q, %v", p, version, err)
	}
	first := ratelimit.Pool{Members: map[string]ratelimit.Lease{"a": {TPM: 10, RPM: 1, Want: 0.5, Expires: time.Unix(1_900_000_000, 0).UTC()}}}
	v1, err := store.Save(ctx, leaseDeployment, first, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(ctx, leaseDeployment, first, ""); !errors.Is(err, ratelimit.ErrConflict) {
		t.Errorf("a second create = %v, want ErrConflict", err)
	}
	v2, err := store.Save(ctx, leaseDeployment, ratelimit.Pool{}, v1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(ctx, leaseDeployment, first, v1); !errors.Is(err, ratelimit.ErrConflict) {
		t.Errorf("a save on a stale version = %v, want ErrConflict", err)
	}
	got, v, err := store.Load(ctx, leaseDeployment)
	if err != nil || v != v2 || len(got.Members) != 0 {
		t.Errorf("Load = %+v, %q, %v; want the empty pool at %q", got, v, err, v2)
	}
}

// interleaved is a store that lets another instance renew between one
// instance's load and its save, once: the save then meets a changed ETag.
type interleaved struct {
	*tablestore.RateLimits
	once  sync.Once
	other func()
}

func (s *interleaved) Save(ctx context.Context, d string, p ratelimit.Pool, version string) (string, error) {
	s.once.Do(s.other)
	return s.RateLimits.Save(ctx, d, p, version)
}

func TestFleet_AConflictingSaveStartsOver(t *testing.T) {
	t.Parallel()
	clock := ratelimittest.NewManualClock(time.Now().Truncate(time.Second))
	store := tablestore.NewRateLimits(service(t), tableName(t, "rl"))
	b := newInstance(t, store, "b", clock, ratelimit.Limits{}, zerolog.Nop())
	racy := &interleaved{RateLimits: store, other: func() { b.renew(t) }}
	a := newInstance(t, racy, "a", clock, ratelimit.Limits{}, zerolog.Nop())

	a.renew(t) // load; b renews (takes the whole quota); a's save conflicts; a starts over
	if s := a.fleet.Stats(); s.Conflicts != 1 || s.Loads != 2 || s.Saves != 2 {
		t.Errorf("a's stats %+v, want 1 conflict, 2 loads, 2 saves", s)
	}
	if got := b.lim.Limits(); got != leaseQuota {
		t.Errorf("b, first in, holds %+v, want the whole quota", got)
	}
	if got := a.lim.Limits(); got.TPM != 0 {
		t.Errorf("a holds %+v while b holds the whole quota", got)
	}
	given, cooling, members := pooled(t, store)
	if members != 2 || given.TPM+cooling.TPM > leaseQuota.TPM || given.RPM+cooling.RPM > leaseQuota.RPM {
		t.Errorf("pool gives %+v and cools %+v to %d members, quota %+v", given, cooling, members, leaseQuota)
	}
}

func TestFleet_ConcurrentRenewalsNeverGiveOutMoreThanTheQuota(t *testing.T) {
	t.Parallel()
	const n = 6
	clock := ratelimittest.NewManualClock(time.Now().Truncate(time.Second))
	store := tablestore.NewRateLimits(service(t), tableName(t, "rl"))
	var fleet []*instance
	for i := range n {
		fleet = append(fleet, newInstance(t, store, fmt.Sprintf("p%d", i), clock, ratelimit.Limits{}, zerolog.Nop()))
	}
	var conflicts int64
	for round := range 8 {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, in := range fleet {
			wg.Go(func() { errs <- in.fleet.Renew(context.Background()) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		given, cooling, members := pooled(t, store)
		var local ratelimit.Limits
		for _, in := range fleet {
			l := in.lim.Limits()
			local.TPM, local.RPM = local.TPM+l.TPM, local.RPM+l.RPM
		}
		if members != n || given.TPM+cooling.TPM > leaseQuota.TPM || given.RPM+cooling.RPM > leaseQuota.RPM || local.TPM > given.TPM {
			t.Fatalf("round %d: the pool gives %+v and cools %+v to %d members, the limiters hold %+v; quota %+v", round, given, cooling, members, local, leaseQuota)
		}
		clock.Advance(ratelimit.DefaultRenew)
	}
	for _, in := range fleet {
		conflicts += in.fleet.Stats().Conflicts
		if got, fair := in.lim.Limits(), leaseQuota.TPM/n; got.TPM < fair*95/100 || got.TPM > fair {
			t.Errorf("after eight renewals an idle member holds %+v, want about %d tokens", got, fair)
		}
	}
	t.Logf("%d conflicting saves in %d renewals", conflicts, 8*n)
}

func TestFleet_AVanishedLeaseIsReusedAWindowAfterItExpires(t *testing.T) {
	t.Parallel()
	clock := ratelimittest.NewManualClock(time.Now().Truncate(time.Second))
	store := tablestore.NewRateLimits(service(t), tableName(t, "rl"))
	gone := newInstance(t, store, "gone", clock, ratelimit.Limits{}, zerolog.Nop())
	gone.renew(t) // takes the whole quota, then crashes: never renews, never gives back
	expires := clock.Now().Add(ratelimit.DefaultTTL)

	b := newInstance(t, store, "b", clock, ratelimit.Limits{}, zerolog.Nop())
	b.renew(t)
	if got := b.lim.Limits(); got.TPM != 0 {
		t.Fatalf("b got %+v while the other lease is live", got)
	}
	// Expired, but it may have sent until it expired: cooling for a window.
	clock.Advance(ratelimit.DefaultTTL + 30*time.Second)
	b.renew(t)
	if got := b.lim.Limits(); got.TPM != 0 {
		t.Fatalf("b got %+v %v after the other lease expired, within its window", got, clock.Now().Sub(expires))
	}
	clock.Advance(31*time.Second + ratelimit.DefaultSkew)
	b.renew(t)
	if got := b.lim.Limits(); got != leaseQuota {
		t.Errorf("b holds %+v a window after the other lease expired, want the whole quota", got)
	}
}

func TestFleet_AReleasedLeaseCoolsAsItsAdmissionsLeaveTheWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := ratelimittest.NewManualClock(time.Now().Truncate(time.Second))
	store := tablestore.NewRateLimits(service(t), tableName(t, "rl"))
	a := newInstance(t, store, "a", clock, ratelimit.Limits{}, zerolog.Nop())
	a.renew(t)
	if err := a.lim.Wait(ctx, 20_000); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	a.fleet.Release(ctx) // scale-in: what a admitted stays in the window for 55 s more
	if err := a.lim.Wait(ctxWithin(t, time.Second), 1); err == nil {
		t.Error("a released instance still admits")
	}

	b := newInstance(t, store, "b", clock, ratelimit.Limits{}, zerolog.Nop())
	clock.Advance(5 * time.Second)
	b.renew(t)
	if got := b.lim.Limits(); got.TPM != leaseQuota.TPM-20_000 || got.RPM != leaseQuota.RPM-1 {
		t.Errorf("b holds %+v, want the quota less what a admitted: %d tokens, %d requests", got, leaseQuota.TPM-20_000, leaseQuota.RPM-1)
	}
	for range 4 { // renewing, until 40 s later: a's admission is still in the window
		clock.Advance(ratelimit.DefaultRenew)
		b.renew(t)
	}
	if got := b.lim.Limits(); got.TPM != leaseQuota.TPM-20_000 {
		t.Errorf("b holds %+v while a's admission is in the window, want %d tokens", got, leaseQuota.TPM-20_000)
	}
	clock.Advance(10*time.Second + ratelimit.DefaultSkew + time.Second) // it has left
	b.renew(t)
	if got := b.lim.Limits(); got != leaseQuota {
		t.Errorf("b holds %+v once a's admission left the window, want the whole quota", got)
	}
}

// switchable is a store that is down (a real client on a port nobody
// listens on) until it is brought up.
type switchable struct {
	up, down ratelimit.LeaseStore
	mu       sync.Mutex
	isUp     bool
}

func (s *switchable) store() ratelimit.LeaseStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isUp {
		return s.up
	}
	return s.down
}

func (s *switchable) set(up bool) { s.mu.Lock(); s.isUp = up; s.mu.Unlock() }

func (s *switchable) Load(ctx context.Context, d string) (ratelimit.Pool, string, error) {
	return s.store().Load(ctx, d)
}

func (s *switchable) Save(ctx context.Context, d string, p ratelimit.Pool, v string) (string, error) {
	return s.store().Save(ctx, d, p, v)
}

// deadStore is the lease store on a loopback port nobody listens on.
func deadStore(t *testing.T) *tablestore.RateLimits {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cs := strings.Replace(tablestore.DevelopmentStorage, "127.0.0.1:10002", addr, 1)
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: cs})
	if err != nil {
		t.Fatal(err)
	}
	return tablestore.NewRateLimits(svc, tableName(t, "rl"))
}

// ctxWithin bounds a call that is expected to fail, not to wait.
func ctxWithin(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestFleet_WithoutTheStoreTheStaticShareSaidOnce(t *testing.T) {
	t.Parallel()
	clock := ratelimittest.NewManualClock(time.Now().Truncate(time.Second))
	store := &switchable{up: tablestore.NewRateLimits(service(t), tableName(t, "rl")), down: deadStore(t)}
	store.set(true)
	static := ratelimit.Limits{TPM: 1500, RPM: 9} // the quota over the platform's 40 instances
	var logs syncBuffer
	a := newInstance(t, store, "a", clock, static, zerolog.New(&logs))
	a.renew(t)
	if got := a.lim.Limits(); got != leaseQuota {
		t.Fatalf("a holds %+v, want the whole quota", got)
	}

	store.set(false)
	clock.Advance(ratelimit.DefaultRenew)
	renewErr := a.fleet.Renew(ctxWithin(t, 300*time.Millisecond))
	if renewErr == nil {
		t.Fatal("Renew against a dead store succeeded")
	}
	if got := a.lim.Limits(); got != leaseQuota {
		t.Errorf("a holds %+v before its lease expired, want it kept", got)
	}
	for range 3 { // past the lease's end, and on
		clock.Advance(ratelimit.DefaultRenew)
		_ = a.fleet.Renew(ctxWithin(t, 300*time.Millisecond))
	}
	if got := a.lim.Limits(); got != static {
		t.Errorf("a holds %+v with its lease expired and no store, want the static share %+v", got, static)
	}
	if err := a.lim.Wait(ctxWithin(t, 5*time.Second), 100); err != nil {
		t.Errorf("the static share does not admit: %v", err)
	}
	if n := strings.Count(logs.String(), "lease store cannot be reached"); n != 1 {
		t.Errorf("the fallback was logged %d times, want once:\n%s", n, logs.String())
	}
	if s := a.fleet.Stats(); s.Fallbacks != 1 || s.Failures < 4 {
		t.Errorf("stats %+v, want one fallback and a failure per renewal", s)
	}

	store.set(true)
	clock.Advance(ratelimit.DefaultRenew)
	a.renew(t)
	if got := a.lim.Limits(); got != static {
		t.Errorf("a holds %+v with the store back and its old lease cooling, want the static share %+v", got, static)
	}
	clock.Advance(time.Minute) // the old lease has cooled
	a.renew(t)
	if got := a.lim.Limits(); got != leaseQuota {
		t.Errorf("a holds %+v with the store back, want the whole quota", got)
	}
	if !strings.Contains(logs.String(), "answers again") {
		t.Errorf("the store's return was not logged:\n%s", logs.String())
	}
}

func TestFleet_RunRenewsHalfAsOftenWhileSteadyAndGivesBackAtTheEnd(t *testing.T) {
	t.Parallel()
	clock := ratelimittest.NewManualClock(time.Now().Truncate(time.Second))
	store := tablestore.NewRateLimits(service(t), tableName(t, "rl"))
	a := newInstance(t, store, "a", clock, ratelimit.Limits{}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.fleet.Run(ctx) }()
	saves := func(n int64) func() bool {
		return func() bool { return a.fleet.Stats().Saves == n && clock.Pending() == 1 }
	}

	poll.Until(t, 10*time.Second, "the first renewal and its timer", saves(1))  // took the quota: a change
	clock.Advance(ratelimit.DefaultRenew * 11 / 10)                             // at most 10 s + 10% later
	poll.Until(t, 10*time.Second, "the second renewal and its timer", saves(2)) // nothing changed: steady
	clock.Advance(ratelimit.DefaultRenew * 12 / 10)
	if n := clock.Pending(); n != 1 {
		t.Fatalf("a steady fleet renewed within 12 s (%d timers pending)", n)
	}
	clock.Advance(ratelimit.DefaultRenew)                                      // 22 s: past 2/3 of the TTL + 10%
	poll.Until(t, 10*time.Second, "the third renewal and its timer", saves(3)) // still steady
	cancel()
	<-done
	if s := a.fleet.Stats(); s.Saves != 4 {
		t.Errorf("stats %+v after Run ended, want the lease given back (a fourth save)", s)
	}
	if _, _, members := pooled(t, store); members != 0 {
		t.Errorf("%d members in the pool after Run ended, want none", members)
	}
}

func TestFleet_AHeavyInstanceCannotStarveALightOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := ratelimittest.NewManualClock(time.Now().Truncate(time.Second))
	store := tablestore.NewRateLimits(service(t), tableName(t, "rl"))
	heavy := newInstance(t, store, "heavy", clock, ratelimit.Limits{}, zerolog.Nop())
	light := newInstance(t, store, "light", clock, ratelimit.Limits{}, zerolog.Nop())
	heavy.renew(t) // first in: the whole quota
	if err := heavy.lim.Wait(ctx, leaseQuota.TPM); err != nil {
		t.Fatal(err)
	}
	heavyNext := make(chan error, 1) // a large document's next batch: waits for the window
	go func() { heavyNext <- heavy.lim.Wait(ctx, 8000) }()
	light.renew(t)
	lightCall := make(chan error, 1) // a small document's one call
	go func() { lightCall <- light.lim.Wait(ctx, 600) }()
	poll.Until(t, 10*time.Second, "both waiting", func() bool { return heavy.lim.Stats().Queued == 1 && light.lim.Stats().Queued == 1 })

	// A window and a renewal later, the light instance's call has gone.
	for elapsed := time.Duration(0); elapsed < time.Minute+ratelimit.DefaultRenew; elapsed += ratelimit.DefaultRenew / 2 {
		clock.Advance(ratelimit.DefaultRenew / 2)
		light.renew(t)
		heavy.renew(t)
	}
	select {
	case err := <-lightCall:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the light instance's call still waits a window after the heavy one filled it: light %+v, heavy %+v", light.lim.Limits(), heavy.lim.Limits())
	}
	lim, got := light.lim.Limits(), heavy.lim.Limits()
	if got.TPM+lim.TPM > leaseQuota.TPM {
		t.Errorf("heavy %+v and light %+v hold more than the quota", got, lim)
	}
}
