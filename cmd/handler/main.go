// Command handler is offpath's Azure Functions custom handler: the HTTP
// server the Functions host starts and calls once per trigger. It only wires:
// configuration, the root logger, the functions and the server; the logic
// lives in internal/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/api"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/console"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/openaiapi"
	"github.com/offpath/offpath/internal/ratelimit"
)

// timerBinding is the timer functions' trigger binding, as in their
// function.json.
const timerBinding = "timer"

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	printConfig := flag.Bool("print-config", false, "print the effective configuration, every default applied and every secret redacted, and exit")
	flag.Parse()
	if *printConfig {
		if err := printConfiguration(os.Getenv, os.ReadFile, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "handler:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "handler:", err)
		os.Exit(1)
	}
}

// printConfiguration writes the configuration the handler would run with
// (config.Handler.Print: JSON, secrets redacted), read from the same
// settings and app folder; FUNCTIONS_CUSTOMHANDLER_PORT, which only the
// host sets, may be missing. A configuration the handler would refuse is
// printed too, and its errors returned.
func printConfiguration(getenv func(string) string, readFile func(string) ([]byte, error), stdout io.Writer) error {
	cfg, err := config.Inspect(getenv, readFile)
	if perr := cfg.Print(stdout); perr != nil {
		return perr
	}
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return nil
}

// run starts the handler and serves until ctx is done, then shuts down
// gracefully: in-flight invocations get up to 25 s to finish.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := config.LoadHandler(getenv, os.ReadFile)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := zerolog.New(stdout).Level(*cfg.LogLevel).With().Timestamp().Str("service", "offpath-handler").Logger()

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	h, err := build(cfg, logger)
	if err != nil {
		return err
	}
	// After the server has shut down: its last ledger writes are sent too.
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.stopMetrics(ctx)
	}()
	// The shared quota's leases outlive the server: in-flight invocations
	// keep calling the models until Shutdown returns; then they are given back.
	leaseCtx, stopLeases := context.WithCancel(context.WithoutCancel(ctx))
	leasesDone := make(chan struct{})
	go func() {
		defer close(leasesDone)
		if h.fleet != nil {
			h.fleet.Run(leaseCtx)
		}
	}()
	defer func() { stopLeases(); <-leasesDone }()

	srv := &http.Server{
		Handler: h.mux,
		// The whole request, body included, within RequestReadTimeout: a
		// client trickling its body is cut off (the handler reading it
		// sees an error). Writing is not bounded: invocations take as
		// long as they take, up to their own deadline.
		ReadHeaderTimeout: min(10*time.Second, cfg.RequestReadTimeout),
		ReadTimeout:       cfg.RequestReadTimeout,
		IdleTimeout:       2 * time.Minute,
	}
	logger.Info().Int("port", cfg.Port).Dur("invocation_timeout_ms", cfg.InvocationTimeout).Str("version", version).
		Str("storage", cfg.Storage.Setting).Str("table_service_url", cfg.Storage.TableServiceURL).
		Str("models", cfg.ModelsSource).Strs("aliases", cfg.Catalog.Names()).
		Int("admin_keys", cfg.AdminKeys).Bool("entra", cfg.Entra != nil).Bool("batch", h.batch).Msg("handler listening")
	if cfg.AdminKeys == 0 {
		logger.Warn().Msg("OFFPATH_ADMIN_KEY_SHA256 is not set: the admin API refuses every request")
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info().Msg("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// handler is the wired handler: the functions on their routes, and what
// outlives a request.
type handler struct {
	mux *invoke.Mux
	// fleet, when the quota is shared, must run while invocations may call
	// the models.
	fleet *ratelimit.Fleet
	// stopMetrics sends the queued token metrics and closes their sinks.
	stopMetrics func(context.Context)
	// services are the clients every flow shares.
	services *services
	// batch says whether the batch path is configured.
	batch bool
}

// build wires the handler from its configuration: one client per external
// system (services), the flows over them, the functions on the mux. It
// does no I/O beyond what the token metrics' sinks open.
func build(cfg config.Handler, logger zerolog.Logger) (*handler, error) {
	svcs := newServices(cfg)
	tables, err := svcs.Tables()
	if err != nil {
		return nil, err
	}
	metrics, prom, stopMetrics, err := newTokenMetrics(cfg, svcs, tables, logger)
	if err != nil {
		return nil, err
	}
	h := &handler{stopMetrics: stopMetrics, services: svcs}
	fail := func(err error) (*handler, error) {
		stopMetrics(context.Background())
		return nil, err
	}
	tenancy, err := newTenancy(cfg, tables, metrics)
	if err != nil {
		return fail(err)
	}
	tenancy.prom = prom
	batches, err := newBatch(cfg, svcs, tenancy, logger)
	if err != nil {
		return fail(fmt.Errorf("batch: %w", err))
	}
	h.batch = batches != nil
	reconciler, err := newReconciler(cfg, svcs, tenancy)
	if err != nil {
		return fail(fmt.Errorf("reconcile: %w", err))
	}
	apiOpts := api.Options{
		Build: buildInfo(), Started: time.Now(),
		Auth: tenancy.auth, Tenants: tenancy.tenants, Usage: tenancy.ledger, Catalog: cfg.Catalog, Webhooks: tenancy.webhooks,
		Console: console.New(), Alerts: tenancy.alerts,
		Documents: tenancy.docs,
	}
	if batches != nil {
		apiOpts.Batches, apiOpts.Held, apiOpts.Findings, apiOpts.Reports = batches.svc, batches.svc, batches.findings, batches.nightly
	}
	// Every invocation whose data cannot be decoded is a rejection recorded
	// in the document statuses (invoke.Mux.reject): never a retry.
	rejections := ingest.NewRejections(tenancy.tenants, tenancy.docs)
	mux := invoke.NewMux(logger, invoke.Options{Timeout: cfg.InvocationTimeout, Rejections: rejections})
	door := newOpenAIDoor(cfg, tenancy, batches)
	mux.Forward(openaiapi.Prefix, door)                                                                     // HTTP: functions/openai
	mux.HandleTrigger("batch-poll", invoke.TimerTrigger, timerBinding, pollBatches(batches))                // timer: functions/batch-poll
	mux.HandleTrigger("nightly-summaries", invoke.TimerTrigger, timerBinding, runNightly(batches))          // timer: functions/nightly-summaries
	mux.HandleTrigger("report-deadline", invoke.TimerTrigger, timerBinding, checkReportDeadline(batches))   // timer: functions/report-deadline
	mux.HandleTrigger("batch-audit", invoke.TimerTrigger, timerBinding, runAudit(batches))                  // timer: functions/batch-audit
	mux.HandleTrigger("webhook-deliver", invoke.TimerTrigger, timerBinding, deliverWebhooks(batches, door)) // timer: functions/webhook-deliver
	mux.HandleTrigger("reconcile", invoke.TimerTrigger, timerBinding, runReconcile(reconciler))             // timer: functions/reconcile
	fleet, enq, err := registerIngest(mux, cfg, svcs, tenancy, logger)
	if err != nil {
		return fail(err)
	}
	if enq != nil {
		apiOpts.Reprocessor = enq
	}
	mux.Forward("/api/", api.New(apiOpts)) // HTTP: functions/api
	h.mux, h.fleet = mux, fleet
	return h, nil
}

func buildInfo() api.Build {
	b := api.Build{Version: version, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				b.Commit = s.Value
			}
		}
	}
	return b
}
