package batch_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
)

// BenchmarkPollTick runs the poll tick over 100, 1,000, 5,000 and 10,000
// active jobs on Azurite, each with a submitted batch at the in-process
// simulator, whose clock is frozen: every batch stays validating and
// every tick looks at all of them. The service's clock moves on by one
// poll interval (the default minute) per tick, so every batch is due and
// nothing changes: nothing is written (the benchmark fails if anything
// is). The first tick after seeding, which writes every job, is not
// timed. The jobs are seeded once and added to between sizes.
//
// Beside each tick, in the same iteration, it measures the floor: the
// very reads of Table Storage and of Azure that the tick made (recorded
// as it ran: the same queries, point reads, list pages and GETs, with the
// same concurrency) replayed with no processing. It reports the tick's
// seconds, its cost per job, the floor's seconds and the ratio of the two;
// and, beside them, what reading the same jobs and batches one at a time
// costs with no processing (the index, then per job a point read and a
// GET, 16 jobs at once: how the tick read them before).
// Run it with `make bench` or
//
//	go test -run '^$' -bench PollTick -benchtime 2x -timeout 30m ./internal/batch/
func BenchmarkPollTick(b *testing.B) {
	e := newEnv(b, envConfig{sim: simConfig(0)})
	rj := &recJobs{JobStore: e.jobs}
	ra := &recAzure{Azure: e.azure}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	o := e.opts
	o.Jobs, o.Azure = rj, ra
	o.PollInterval = batch.DefaultPollInterval
	o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	logger := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithTimeout(logger.WithContext(context.Background()), 25*time.Minute)
	defer cancel()
	svc, err := batch.New(o)
	if err != nil {
		b.Fatal(err)
	}
	seeded := 0
	for _, n := range []int{100, 1000, 5000, 10000} {
		b.Run("jobs="+strconv.Itoa(n), func(b *testing.B) {
			// A first tick long after the last writes every job's poll time.
			advance(10 * batch.DefaultPollInterval)
			if seeded < n {
				seedActive(b, e, n-seeded)
				seeded = n
			}
			if rep, err := svc.Poll(ctx); err != nil || rep.Jobs != n {
				b.Fatalf("first tick: %+v, %v", rep, err)
			}
			var tick, floor, single time.Duration
			for b.Loop() {
				rj.reset()
				ra.reset()
				advance(batch.DefaultPollInterval)
				start := time.Now()
				rep, err := svc.Poll(ctx)
				tick += time.Since(start)
				if err != nil || rep.Jobs != n || rep.Polled != n || rep.Failed != 0 {
					b.Fatalf("tick: %+v, %v", rep, err)
				}
				if rj.updates.Load() != 0 {
					b.Fatalf("the tick wrote %d jobs, want none", rj.updates.Load())
				}
				b.StopTimer()
				start = time.Now()
				replay(b, ctx, e, rj, ra, batch.DefaultConcurrency)
				floor += time.Since(start)
				start = time.Now()
				oneByOne(b, ctx, e, batch.DefaultConcurrency)
				single += time.Since(start)
				b.StartTimer()
			}
			t, f := tick.Seconds()/float64(b.N), floor.Seconds()/float64(b.N)
			b.ReportMetric(t, "tick-s")
			b.ReportMetric(t/float64(n)*1e6, "µs/job")
			b.ReportMetric(f, "floor-s")
			b.ReportMetric(t/f, "x-floor")
			o := single.Seconds() / float64(b.N)
			b.ReportMetric(o, "one-by-one-reads-s")
			b.Logf("%d jobs: tick %.3f s (%.0f µs/job), floor %.3f s (%s), %.2f× the floor; the same jobs and batches read one by one %.3f s (%.2f× the tick)",
				n, t, t/float64(n)*1e6, f, rj.summary()+", "+ra.summary(), t/f, o, o/t)
		})
	}
}

// recJobs records the reads the tick makes of the job store.
type recJobs struct {
	batch.JobStore
	mu      sync.Mutex
	gets    [][2]string
	ranges  [][3]string
	lists   int
	updates atomic.Int64
}

func (r *recJobs) Unfinished(ctx context.Context, tenantID, newest, oldest string) ([]batch.Job, error) {
	r.mu.Lock()
	r.ranges = append(r.ranges, [3]string{tenantID, newest, oldest})
	r.mu.Unlock()
	return r.JobStore.Unfinished(ctx, tenantID, newest, oldest)
}

func (r *recJobs) Update(ctx context.Context, j batch.Job) (batch.Job, error) {
	r.updates.Add(1)
	return r.JobStore.Update(ctx, j)
}

func (r *recJobs) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets, r.ranges, r.lists = nil, nil, 0
	r.updates.Store(0)
}

func (r *recJobs) Get(ctx context.Context, tenantID, id string) (batch.Job, error) {
	r.mu.Lock()
	r.gets = append(r.gets, [2]string{tenantID, id})
	r.mu.Unlock()
	return r.JobStore.Get(ctx, tenantID, id)
}

func (r *recJobs) ListActive(ctx context.Context) ([]batch.ActiveRef, error) {
	r.mu.Lock()
	r.lists++
	r.mu.Unlock()
	return r.JobStore.ListActive(ctx)
}

func (r *recJobs) summary() string {
	return fmt.Sprintf("%d index listings, %d range queries, %d point reads", r.lists, len(r.ranges), len(r.gets))
}

// recAzure records the reads the tick makes at Azure.
type recAzure struct {
	batch.Azure
	mu     sync.Mutex
	gets   []string
	lists  []listCall
	listed int
}

type listCall struct {
	ids   []string
	since time.Time
}

func (r *recAzure) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets, r.lists, r.listed = nil, nil, 0
}

func (r *recAzure) ListBatchStates(ctx context.Context, ids []string, since time.Time) (map[string]batch.AzureBatch, error) {
	seen, err := r.Azure.ListBatchStates(ctx, ids, since)
	r.mu.Lock()
	r.lists = append(r.lists, listCall{ids, since})
	r.listed += len(seen)
	r.mu.Unlock()
	return seen, err
}

func (r *recAzure) GetBatch(ctx context.Context, id string) (batch.AzureBatch, error) {
	r.mu.Lock()
	r.gets = append(r.gets, id)
	r.mu.Unlock()
	return r.Azure.GetBatch(ctx, id)
}

func (r *recAzure) summary() string {
	return fmt.Sprintf("%d batch list reads showing %d batches, %d batch GETs", len(r.lists), r.listed, len(r.gets))
}

// replay makes the recorded reads again, conc at a time, with no
// processing: the floor of the tick that made them.
func replay(tb testing.TB, ctx context.Context, e *env, rj *recJobs, ra *recAzure, conc int) {
	tb.Helper()
	for range rj.lists {
		if _, err := e.jobs.ListActive(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	run(tb, conc, rj.ranges, func(r [3]string) error { _, err := e.jobs.Unfinished(ctx, r[0], r[1], r[2]); return err })
	for _, l := range ra.lists {
		if _, err := e.azure.ListBatchStates(ctx, l.ids, l.since); err != nil {
			tb.Fatal(err)
		}
	}
	var calls []func() error
	for _, g := range rj.gets {
		calls = append(calls, func() error { _, err := e.jobs.Get(ctx, g[0], g[1]); return err })
	}
	for _, id := range ra.gets {
		calls = append(calls, func() error { _, err := e.azure.GetBatch(ctx, id); return err })
	}
	run(tb, conc, calls, func(c func() error) error { return c() })
}

// oneByOne reads every active job and its batch one at a time, conc jobs
// at once, with no processing.
func oneByOne(tb testing.TB, ctx context.Context, e *env, conc int) {
	tb.Helper()
	refs, err := e.jobs.ListActive(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	run(tb, conc, refs, func(r batch.ActiveRef) error {
		j, err := e.jobs.Get(ctx, r.Tenant, r.ID)
		if err != nil {
			return err
		}
		_, err = e.azure.GetBatch(ctx, j.Parts[0].BatchID)
		return err
	})
}

// run calls f on every x, conc at a time.
func run[T any](tb testing.TB, conc int, xs []T, f func(T) error) {
	tb.Helper()
	sem := make(chan struct{}, max(conc, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, x := range xs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(x); err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		tb.Fatal(first)
	}
}
