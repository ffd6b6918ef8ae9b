package azopenai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/ratelimittest"
)

// The fleet scenario: instances of the queue path's model client, each
// in its own process with its own limiter, drain a backlog of summaries
// against one simulator deployment with a TPM and an RPM limit, in time
// running fleetSpeed times faster than real time (ratelimittest.ScaledClock;
// the simulator's rate window runs on the same clock). Every process runs
// two instances side by side: one sharing the quota with the fleet through
// leases in Table Storage (Azurite), one with the static per-instance share
// (the quota divided by the planned fleetPlanned instances), each on its own
// deployment with the same limits.
const (
	fleetTPM        = 120_000
	fleetRPM        = 720 // 6 per 1,000 TPM, as Azure derives it
	fleetSpeed      = 6
	fleetWorkers    = 16 // calls in flight per instance (host.json's maxConcurrentCalls)
	fleetPlanned    = 16 // what the static share is divided by
	fleetMaxTokens  = 64
	fleetShared     = "chat-shared"
	fleetStatic     = "chat-static"
	fleetResultLine = "FLEET-RESULT "
)

// The throughput is measured over whole windows of the limiter (61 s)
// after the first: a backlog behind a sliding window goes in bursts a
// window apart, which a measurement of a fraction of a window would
// catch a variable number of.
const (
	fleetWindow = ratelimit.DefaultWindow
	fleetWarm   = 66 * time.Second
)

// fleetText is one document to summarise: about 600 tokens charged a call.
var fleetText = strings.Repeat("A paragraph of the document to summarise. ", 48)

// fleetInstanceResult is what one process reports when it stops.
type fleetInstanceResult struct {
	Shared, Static int64 // calls answered
	Leases         ratelimit.FleetStats
}

// TestFleetInstance is one process of BenchmarkFleetQuota; it runs only
// when that benchmark starts it, until its stdin closes.
func TestFleetInstance(t *testing.T) {
	env := os.Getenv("OFFPATH_FLEET_INSTANCE")
	if env == "" {
		t.Skip("a process of BenchmarkFleetQuota")
	}
	var cfg struct {
		ID, URL, Storage, Table string
		Origin, Base            time.Time
	}
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		t.Fatal(err)
	}
	clock := ratelimittest.NewScaledClock(cfg.Origin, cfg.Base, fleetSpeed)
	quota := ratelimit.Limits{TPM: fleetTPM, RPM: fleetRPM}
	static := ratelimit.PerInstance(quota, fleetPlanned)
	set, err := ratelimit.NewSet(map[string]ratelimit.Limits{fleetShared: static, fleetStatic: static}, ratelimit.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: cfg.Storage})
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := ratelimit.NewFleet(set, map[string]ratelimit.Limits{fleetShared: quota}, map[string]ratelimit.Limits{fleetShared: static},
		tablestore.NewRateLimits(svc, cfg.Table), ratelimit.FleetOptions{ID: cfg.ID, Clock: clock}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cfg.URL, set, func(c *azopenai.QueueConfig) { c.Now, c.Sleep = clock.Now, clock.Sleep })

	leaseCtx, stopLeases := context.WithCancel(context.Background())
	leasesDone := make(chan struct{})
	go func() { defer close(leasesDone); fleet.Run(leaseCtx) }()
	ctx, cancel := context.WithCancel(context.Background())
	var shared, stat atomic.Int64
	var wg sync.WaitGroup
	for _, d := range []struct {
		name  string
		calls *atomic.Int64
	}{{fleetShared, &shared}, {fleetStatic, &stat}} {
		for range fleetWorkers {
			wg.Go(func() {
				for ctx.Err() == nil {
					s, _ := c.Summarize(ctx, d.name, fleetText, fleetMaxTokens)
					d.calls.Add(int64(s.Trace.Requests))
				}
			})
		}
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // the benchmark closes it to stop this instance
	cancel()
	wg.Wait()
	stopLeases()
	<-leasesDone
	out, _ := json.Marshal(fleetInstanceResult{Shared: shared.Load(), Static: stat.Load(), Leases: fleet.Stats()})
	fmt.Printf("\n%s%s\n", fleetResultLine, out)
}

// fleetProc is one running instance process.
type fleetProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
}

// fleetEnv is what the scenario's processes share.
type fleetEnv struct {
	url, storage, table string
	origin, base        time.Time
	clock               ratelimittest.ScaledClock
	sim                 *aoaisim.Server
	seq                 int
}

func (e *fleetEnv) start(tb testing.TB) *fleetProc {
	tb.Helper()
	e.seq++
	cfg, _ := json.Marshal(map[string]any{"ID": "p" + strconv.Itoa(e.seq), "URL": e.url, "Storage": e.storage, "Table": e.table, "Origin": e.origin, "Base": e.base})
	p := &fleetProc{cmd: exec.Command(os.Args[0], "-test.run=^TestFleetInstance$", "-test.bench=^$", "-test.count=1")}
	p.cmd.Env = append(os.Environ(), "OFFPATH_FLEET_INSTANCE="+string(cfg))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// stop closes the process's stdin and reads its result.
func (p *fleetProc) stop(tb testing.TB) fleetInstanceResult {
	tb.Helper()
	p.stdin.Close()
	err := p.cmd.Wait()
	sc := bufio.NewScanner(bytes.NewReader(p.out.Bytes()))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), fleetResultLine); ok {
			var r fleetInstanceResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				tb.Fatal(err)
			}
			return r
		}
	}
	tb.Fatalf("instance process: %v\n%s", err, p.out.String())
	return fleetInstanceResult{}
}

// fleetStep sets the number of running instances at a moment of a run.
type fleetStep struct {
	at time.Duration
	n  int
}

// fleetFigures are one run's results for one configuration.
type fleetFigures struct {
	tpm, rate429 float64
	calls        int64
}

// runFleet runs the steps for total (virtual) and measures from warm on.
// The first minute is left out of the throughput: a sliding window lets a
// whole minute's quota through at the start, which would flatter any
// configuration, and the previous run's leases are still cooling.
func runFleet(tb testing.TB, e *fleetEnv, steps []fleetStep, total, warm time.Duration) (shared, static fleetFigures, opsPerCall float64) {
	tb.Helper()
	start := e.clock.Now()
	// The fleet runs on a scaled clock (virtual minutes in real
	// milliseconds) with real goroutines, leases and HTTP calls: the pause
	// until the next step is the run itself, what the figures measure.
	until := func(d time.Duration) { time.Sleep(e.clock.Real(start.Add(d).Sub(e.clock.Now()))) }
	var running []*fleetProc
	var results []fleetInstanceResult
	before := map[string]aoaisim.DeploymentStats{}
	snapshot := func() map[string]aoaisim.DeploymentStats {
		return map[string]aoaisim.DeploymentStats{fleetShared: deployment(tb, e.sim, fleetShared), fleetStatic: deployment(tb, e.sim, fleetStatic)}
	}
	first := snapshot()
	warmed := false
	for _, s := range steps {
		if !warmed && warm <= s.at {
			until(warm)
			before, warmed = snapshot(), true
		}
		until(s.at)
		for len(running) < s.n {
			running = append(running, e.start(tb))
		}
		for len(running) > s.n { // scale-in: the newest go first
			results = append(results, running[len(running)-1].stop(tb))
			running = running[:len(running)-1]
		}
	}
	if !warmed {
		until(warm)
		before = snapshot()
	}
	until(total)
	after := snapshot()
	measured := (total - warm).Minutes()
	for _, p := range running {
		results = append(results, p.stop(tb))
	}
	figures := func(name string) fleetFigures {
		a, b, f := after[name], before[name], first[name]
		r := fleetFigures{tpm: float64(a.TokensCharged-b.TokensCharged) / (fleetTPM * measured), calls: a.Requests - f.Requests}
		if n := a.Requests - f.Requests + a.Throttled - f.Throttled; n > 0 {
			r.rate429 = float64(a.Throttled-f.Throttled) / float64(n)
		}
		return r
	}
	var ops, calls int64
	for _, r := range results {
		ops += r.Leases.Loads + r.Leases.Saves
		calls += r.Shared
	}
	if calls > 0 {
		opsPerCall = float64(ops) / float64(calls)
	}
	return figures(fleetShared), figures(fleetStatic), opsPerCall
}

// BenchmarkFleetQuota reports the share of the TPM used and of calls
// answered 429 with 1, 3, 8 and 16 instance processes, and with 1 → 8 → 3
// while the backlog drains, for the shared quota and beside it the static
// share, and the lease store's operations per model call. Run it with
// -benchtime 1x (each run takes about a minute of real time).
func BenchmarkFleetQuota(b *testing.B) {
	az := azurite.Start(b)
	base := time.Now().Truncate(time.Second).Add(300 * time.Millisecond) // not on a bucket edge
	simClock := aoaisim.NewClock(base, fleetSpeed)
	e := &fleetEnv{origin: time.Now(), base: base, storage: az.ConnectionString(), table: "fleet" + strings.ReplaceAll(azurite.Name(b), "-", "")}
	e.clock = ratelimittest.NewScaledClock(e.origin, e.base, fleetSpeed)
	e.sim, e.url = newQueueSim(b, func(c *aoaisim.Config) {
		c.DisableRateLimits = false
		c.RateClock = simClock
		c.Deployments = []aoaisim.Deployment{
			{Name: fleetShared, Model: "gpt-4o-mini", TPM: fleetTPM, RPM: fleetRPM},
			{Name: fleetStatic, Model: "gpt-4o-mini", TPM: fleetTPM, RPM: fleetRPM},
		}
		c.Faults = []aoaisim.FaultRule{{Latency: aoaisim.Duration(50 * time.Millisecond)}} // 0.3 s of virtual time a call
	})
	runs := []struct {
		name         string
		steps        []fleetStep
		total, warm  time.Duration
		instancesFor string
	}{
		{"instances=1", []fleetStep{{0, 1}}, fleetWarm + 4*fleetWindow, fleetWarm, "1"},
		{"instances=3", []fleetStep{{0, 3}}, fleetWarm + 4*fleetWindow, fleetWarm, "3"},
		{"instances=8", []fleetStep{{0, 8}}, fleetWarm + 4*fleetWindow, fleetWarm, "8"},
		{"instances=16", []fleetStep{{0, 16}}, fleetWarm + 4*fleetWindow, fleetWarm, "16"},
		{"instances=1-8-3", []fleetStep{{0, 1}, {2 * time.Minute, 8}, {4 * time.Minute, 3}}, fleetWarm + 6*fleetWindow, fleetWarm, "1 → 8 → 3"},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| instances | shared: %% of TPM | shared: %% 429 | static: %% of TPM | static: %% 429 | lease ops per call |\n|---|---|---|---|---|---|\n")
	for _, r := range runs {
		b.Run(r.name, func(b *testing.B) {
			var shared, static fleetFigures
			var ops float64
			for b.Loop() {
				shared, static, ops = runFleet(b, e, r.steps, r.total, r.warm)
			}
			b.ReportMetric(100*shared.tpm, "shared_%TPM")
			b.ReportMetric(100*shared.rate429, "shared_%429")
			b.ReportMetric(100*static.tpm, "static_%TPM")
			b.ReportMetric(100*static.rate429, "static_%429")
			b.ReportMetric(ops, "lease_ops/call")
			fmt.Fprintf(&table, "| %s | %.1f%% | %.2f%% | %.1f%% | %.2f%% | %.2f |\n", r.instancesFor, 100*shared.tpm, 100*shared.rate429, 100*static.tpm, 100*static.rate429, ops)
		})
	}
	b.Logf("TPM %d, RPM %d, %d calls in flight per instance, static share = quota / %d:\n%s", fleetTPM, fleetRPM, fleetWorkers, fleetPlanned, table.String())
}
