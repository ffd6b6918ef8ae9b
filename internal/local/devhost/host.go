package devhost

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/local/blobwatch"
	"github.com/offpath/offpath/internal/local/sbemu"
)

// Options are the dev host's dependencies and knobs.
type Options struct {
	App *App
	// Storage is the connection string of the storage account the host
	// runs on (Azurite): blob triggers, queue outputs, timer status and the
	// Service Bus stand-in's queues all live there. The host builds its own
	// clients and stand-in from it (Broker returns the stand-in).
	Storage string
	// ServiceBus configures the Service Bus stand-in: lock duration, max
	// delivery count (its Logger is ignored: the host's logger is used).
	ServiceBus sbemu.Options
	// HTTPAddr is where HTTP functions are served; default 127.0.0.1 and
	// local.settings.json's Host.LocalHttpPort (7071).
	HTTPAddr string
	// Listener, when set, is where HTTP functions are served instead of
	// HTTPAddr: a caller that bound its port before starting anything else.
	Listener net.Listener
	// HostID names this host in receipts and timer status; default "devhost".
	HostID string
	// BlobPollInterval is the pause between blob scans; default 2 s.
	BlobPollInterval time.Duration
	// RequestReadTimeout bounds the reading of a caller's whole request,
	// headers and body, on the HTTP address; default
	// DefaultRequestReadTimeout.
	RequestReadTimeout time.Duration
	// HandlerOutput receives the handler's stdout and stderr.
	HandlerOutput io.Writer
	Now           func() time.Time

	blobs  *azblob.Client
	queues *azqueue.ServiceClient
	broker *sbemu.Broker
}

// DefaultRequestReadTimeout is how long a caller may take to send a whole
// request: a client trickling its body is cut off after it, so it cannot
// hold a connection for long.
const DefaultRequestReadTimeout = time.Minute

// Host is a running dev host.
type Host struct {
	opts    Options
	app     *App
	logger  zerolog.Logger
	worker  *worker
	invoker *invoker
	blobs   *blobwatch.Watcher
	ln      net.Listener
	timers  map[string]*timer
	keys    keys
	journal *journal
}

// New prepares a dev host and binds its HTTP address, so that callers know
// where it listens before Run.
func New(opts Options, logger zerolog.Logger) (*Host, error) {
	if opts.App == nil || opts.Storage == "" {
		return nil, errors.New("devhost: App and Storage are required")
	}
	var err error
	if opts.blobs, err = azblob.NewClientFromConnectionString(opts.Storage, nil); err != nil {
		return nil, fmt.Errorf("devhost: blob client: %w", err)
	}
	if opts.queues, err = azqueue.NewServiceClientFromConnectionString(opts.Storage, nil); err != nil {
		return nil, fmt.Errorf("devhost: queue client: %w", err)
	}
	bus := opts.ServiceBus
	bus.Logger = logger
	if opts.broker, err = sbemu.New(opts.queues, opts.blobs, bus); err != nil {
		return nil, fmt.Errorf("devhost: Service Bus stand-in: %w", err)
	}
	opts.HostID = cmp.Or(opts.HostID, "devhost")
	opts.BlobPollInterval = cmp.Or(opts.BlobPollInterval, 2*time.Second)
	opts.RequestReadTimeout = cmp.Or(opts.RequestReadTimeout, DefaultRequestReadTimeout)
	opts.HTTPAddr = cmp.Or(opts.HTTPAddr, "127.0.0.1:"+strconv.Itoa(opts.App.HTTPPort))
	if opts.HandlerOutput == nil {
		opts.HandlerOutput = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w, err := newWorker(opts.App, logger, opts.HandlerOutput)
	if err != nil {
		return nil, err
	}
	j := newJournal()
	h := &Host{
		opts:   opts,
		app:    opts.App,
		logger: logger,
		worker: w,
		invoker: &invoker{
			worker:  w,
			client:  &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
			timeout: opts.App.Host.FunctionTimeout,
			logger:  logger,
		},
		blobs: blobwatch.New(opts.blobs, opts.queues, blobwatch.Options{
			HostID: opts.HostID, PollInterval: opts.BlobPollInterval,
			MaxTries: opts.App.Host.PoisonBlobThreshold, Logger: logger,
			Scanned: func(function string, s blobwatch.Stats, _ error) {
				j.record(Event{Kind: BlobScanned, At: time.Now(), Function: function, Fired: s.Fired})
			},
		}),
		timers:  map[string]*timer{},
		keys:    keysFrom(opts.App),
		journal: j,
	}
	if err := h.prepareTimers(); err != nil {
		return nil, err
	}
	if h.ln = opts.Listener; h.ln != nil {
		return h, nil
	}
	if h.ln, err = net.Listen("tcp", opts.HTTPAddr); err != nil {
		return nil, fmt.Errorf("listen for HTTP functions on %s: %w", opts.HTTPAddr, err)
	}
	return h, nil
}

// Broker is the host's Service Bus stand-in.
func (h *Host) Broker() *sbemu.Broker { return h.opts.broker }

// URL is the base URL of the HTTP front (http://127.0.0.1:7071).
func (h *Host) URL() string { return "http://" + h.ln.Addr().String() }

// HandlerPID is the process id of the handler now running (a restart
// changes it), or 0 while none runs: for a test to watch its resources.
func (h *Host) HandlerPID() int { return h.worker.processID() }

// Run serves until ctx is done: the handler process, the HTTP front, and one
// loop per triggered function. It returns the first loop's failure, if any.
func (h *Host) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(h.app.Functions)+2)
	start := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	start("handler", h.worker.run)
	start("http", h.serveHTTP)
	for _, fn := range h.app.Functions {
		switch t := fn.Trigger(); strings.ToLower(t.Type) {
		case "timertrigger":
			start(fn.Name, h.timers[fn.Name].run)
		case "blobtrigger":
			start(fn.Name, func(ctx context.Context) error { return h.watchBlobs(ctx, fn) })
		case "servicebustrigger":
			start(fn.Name, func(ctx context.Context) error { return h.processQueue(ctx, fn) })
		}
	}
	h.logger.Info().Str("url", h.URL()).Int("functions", len(h.app.Functions)).Msg("dev host running")
	<-ctx.Done()
	wg.Wait()
	close(errs)
	return <-errs
}

// function returns the function called name.
func (h *Host) function(name string) *Function {
	for _, f := range h.app.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// execute runs one invocation of fn: send the envelope, deliver the outputs,
// log one line with the outcome and record an Invoked event, which ev
// describes further (the blob or message). tokens are the trigger's binding
// data for output paths such as {name}.
func (h *Host) execute(ctx context.Context, fn *Function, env envelope, tokens map[string]string, ev Event) (*reply, error) {
	id := newID()
	start := time.Now()
	r, err := h.invoker.invoke(ctx, id, fn.Name, env)
	if err == nil {
		for _, line := range r.Logs {
			h.logger.Info().Str("invocation_id", id).Str("function", fn.Name).Str("source", "invocation").Msg(line)
		}
		err = h.deliver(ctx, fn, r, tokens)
	}
	log := h.logger.Info()
	ev.Kind, ev.Function, ev.InvocationID, ev.Outcome = Invoked, fn.Name, id, "succeeded"
	if err != nil {
		log, ev.Outcome, ev.Err = h.logger.Warn().Err(err), "failed", err.Error()
	}
	log.Str("function", fn.Name).Str("trigger", fn.Trigger().Type).Str("invocation_id", id).
		Dur("duration_ms", time.Since(start)).Str("outcome", ev.Outcome).Msg("invocation")
	h.record(ev)
	return r, err
}
