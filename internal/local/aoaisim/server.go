package aoaisim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Server is the simulated Azure OpenAI resource. It is an http.Handler; use it
// with httptest.NewServer or call Start. Close stops batch workers, unblocks
// hanging requests and removes the temporary data directory.
type Server struct {
	cfg       Config
	log       zerolog.Logger
	clock     *Clock
	rateClock *Clock
	keys      map[string]bool
	deps      map[string]*deploymentState
	filter    *contentFilter
	completer *completer
	faults    *faults
	files     *fileStore
	batches   *batchStore
	quotaMu   sync.Mutex // guards deploymentState.enqueued
	gate      *admissionGate
	stats     *stats
	meter     tokenMeter // tokens served per deployment and minute, for the metrics API
	identity  identity   // tokens issued by the managed identity endpoint
	handler   http.Handler

	// lifetime is the server's own context (not a request's): batch workers
	// run under it and stop when Close cancels it.
	lifetime  context.Context
	stop      context.CancelFunc
	closing   chan struct{} // closed by Close; releases hanging requests
	closeOnce sync.Once
	workers   sync.WaitGroup
	removeDir string

	httpMu  sync.Mutex
	httpSrv *http.Server
}

// New builds a Server from cfg (defaults applied, then validated). logger
// receives state transitions and faults; prompt text is never logged.
func New(cfg Config, logger zerolog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validate config: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		log:       logger.With().Str("component", "aoaisim").Logger(),
		clock:     cfg.Clock,
		rateClock: cfg.RateClock,
		keys:      make(map[string]bool, len(cfg.Keys)),
		deps:      make(map[string]*deploymentState, len(cfg.Deployments)),
		filter:    newContentFilter(cfg.ContentFilter),
		completer: newCompleter(),
		faults:    newFaults(cfg.Faults, cfg.Seed),
		closing:   make(chan struct{}),
	}
	if s.clock == nil {
		speed := 1.0
		if cfg.Speed != nil {
			speed = *cfg.Speed
		}
		s.clock = NewClock(time.Now(), speed)
	}
	if s.rateClock == nil {
		s.rateClock = RealClock()
	}
	for _, k := range cfg.Keys {
		s.keys[k] = true
	}
	for _, d := range cfg.Deployments {
		s.deps[d.Name] = newDeploymentState(d, cfg.DisableRateLimits)
	}
	s.stats = newStats()
	dir := cfg.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "aoaisim-*")
		if err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
		dir, s.removeDir = tmp, tmp
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	s.files = newFileStore(dir)
	s.batches = newBatchStore()
	s.gate = newAdmissionGate()
	s.lifetime, s.stop = context.WithCancel(context.Background())
	s.handler = s.routes()
	s.workers.Add(1)
	go s.sweepFiles()
	return s, nil
}

// ServeHTTP serves the Azure OpenAI data plane and the /_sim admin endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// Clock returns the simulated clock (advance it or change its speed).
func (s *Server) Clock() *Clock { return s.clock }

// SetFaults replaces the fault-injection rules.
func (s *Server) SetFaults(rules []FaultRule) error { return s.faults.set(rules) }

// Faults returns the active fault-injection rules.
func (s *Server) Faults() []FaultRule { return s.faults.list() }

// Deployments returns the configured deployments, defaults applied.
func (s *Server) Deployments() []Deployment {
	out := make([]Deployment, len(s.cfg.Deployments))
	copy(out, s.cfg.Deployments)
	return out
}

// Start listens on addr (default "127.0.0.1:0") and serves in the background.
// It returns the base URL, e.g. "http://127.0.0.1:41234". Close stops it.
func (s *Server) Start(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	s.serve(ln)
	return "http://" + ln.Addr().String(), nil
}

// serve serves on ln in the background until Close.
func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.httpMu.Lock()
	s.httpSrv = srv
	s.httpMu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("serve")
		}
	}()
}

// Close stops the server: hanging requests are released, the listener started
// by Start is shut down, batch workers stop, and a temporary data directory is
// removed. It is safe to call more than once.
func (s *Server) Close() error {
	var errs []error
	s.closeOnce.Do(func() {
		close(s.closing)
		s.httpMu.Lock()
		srv := s.httpSrv
		s.httpMu.Unlock()
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("shutdown http: %w", err))
			}
			cancel()
		}
		s.stop()
		s.workers.Wait()
		s.files.closeAll()
		if s.removeDir != "" {
			if err := os.RemoveAll(s.removeDir); err != nil {
				errs = append(errs, fmt.Errorf("remove data dir: %w", err))
			}
		}
	})
	return errors.Join(errs...)
}

// authorized accepts a configured key in api-key or as a Bearer token.
func (s *Server) authorized(r *http.Request) bool {
	if k := r.Header.Get("api-key"); k != "" {
		return s.keys[k]
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return false
	}
	return s.keys[tok] || s.cfg.AcceptAnyBearer
}

// sweepFiles deletes expired files from disk every simulated hour, but not
// more often than every 100 ms of real time, however fast the clock runs.
func (s *Server) sweepFiles() {
	defer s.workers.Done()
	for {
		next := s.clock.Now().Add(time.Hour)
		if err := s.clock.WaitUntil(s.lifetime, next, nil); err != nil {
			return
		}
		if n := s.files.sweep(s.clock.Now()); n > 0 {
			s.log.Debug().Int("files", n).Msg("expired files removed")
		}
		select {
		case <-s.lifetime.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
