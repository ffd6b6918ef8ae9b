package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
)

// Endpoint is a tenant's registered webhook.
type Endpoint struct {
	Tenant string
	URL    string
	// Secret signs the deliveries; shown to the tenant once, when made.
	Secret  string
	Created time.Time
}

// Attempt is one try at delivering an event.
type Attempt struct {
	At       time.Time     `json:"at"`
	Status   int           `json:"status,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Event is one message to a tenant's endpoint and its deliveries. Its id
// (the webhook-id header) is derived from the job and the event type, so
// recording it twice records it once, and a receiver can deduplicate.
type Event struct {
	Tenant  string
	ID      string
	Type    string
	Job     string
	Payload []byte
	Created time.Time
	// Delivered: an attempt was answered 2xx. Abandoned: every attempt
	// failed. NextAttempt is when a pending event is tried again.
	Delivered   bool
	Abandoned   bool
	NextAttempt time.Time
	Attempts    []Attempt
	ETag        string
}

// Event types.
const (
	TypeCompleted = "batch.completed"
	TypeFailed    = "batch.failed"
	TypeExpired   = "batch.expired"
	TypeCancelled = "batch.cancelled"
	TypeHeld      = "batch.held"
	// TypeFallback: a part of the job cannot finish by its complete_by;
	// its batch is given up and its remaining items run synchronously
	// (the job ends later with one of the ending events).
	TypeFallback = "batch.fallback"
)

// ErrNotFound: no such endpoint.
var ErrNotFound = errors.New("webhook not found")

// Store keeps endpoints and events (package tablestore's Webhooks).
type Store interface {
	Endpoints(ctx context.Context) ([]Endpoint, error)
	// AddEvent records e unless an event of its tenant and id exists.
	AddEvent(ctx context.Context, e Event) error
	// Due returns the events neither delivered nor abandoned whose next
	// attempt is at or before now.
	Due(ctx context.Context, now time.Time) ([]Event, error)
	// UpdateEvent replaces e if its ETag still matches (else ErrConflict).
	UpdateEvent(ctx context.Context, e Event) (Event, error)
}

// ErrConflict: the event changed since it was read.
var ErrConflict = errors.New("webhook event changed concurrently")

// Jobs lists a tenant's jobs, newest first (package batch's Service).
type Jobs interface {
	List(ctx context.Context, tenantID string, state batch.State, cursor string, limit int) ([]batch.Job, string, error)
}

// Defaults of Options.
const (
	DefaultScanWindow  = 7 * 24 * time.Hour
	DefaultHeldAfter   = 2 * time.Hour
	DefaultTimeout     = 10 * time.Second
	DefaultConcurrency = 4
)

// DefaultBackoff is the wait before each retry (the Standard Webhooks
// specification's suggestion); after the last the event is abandoned.
var DefaultBackoff = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Options are the Dispatcher's dependencies and settings.
type Options struct {
	Store Store
	Jobs  Jobs
	// Client sends the deliveries (default: one with Timeout).
	Client *http.Client
	// ScanWindow: jobs created longer ago are not looked at.
	ScanWindow time.Duration
	// HeldAfter: a job held this long gets a batch.held event (once).
	HeldAfter   time.Duration
	Timeout     time.Duration
	Backoff     []time.Duration
	Concurrency int
	Now         func() time.Time
}

// Dispatcher finds jobs that ended (or wait long) for tenants with an
// endpoint, records an event for each, and delivers due events. It runs
// in its own timer function, never inside the batch poll tick.
type Dispatcher struct {
	o Options
	// recorded remembers the events this process has recorded (by tenant
	// and id, with their job's creation), so that a run does not write
	// them again; the store would ignore the write anyway.
	mu       sync.Mutex
	recorded map[string]time.Time
}

// New returns a Dispatcher.
func New(o Options) (*Dispatcher, error) {
	if o.Store == nil || o.Jobs == nil {
		return nil, errors.New("webhook dispatcher: store and jobs are required")
	}
	if o.ScanWindow <= 0 {
		o.ScanWindow = DefaultScanWindow
	}
	if o.HeldAfter <= 0 {
		o.HeldAfter = DefaultHeldAfter
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Dispatcher{o: o, recorded: map[string]time.Time{}}, nil
}

// Report says what one run did.
type Report struct {
	Recorded, Delivered, Failed, Abandoned int
}

// Run records new events, then delivers the due ones.
func (d *Dispatcher) Run(ctx context.Context) (Report, error) {
	var rep Report
	eps, err := d.o.Store.Endpoints(ctx)
	if err != nil {
		return rep, fmt.Errorf("webhook endpoints: %w", err)
	}
	d.forget(d.o.Now().Add(-d.o.ScanWindow))
	byTenant := map[string]Endpoint{}
	var errs []error
	for _, ep := range eps {
		byTenant[ep.Tenant] = ep
		n, err := d.scan(ctx, ep)
		rep.Recorded += n
		if err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", ep.Tenant, err))
		}
	}
	due, err := d.o.Store.Due(ctx, d.o.Now())
	if err != nil {
		return rep, errors.Join(append(errs, fmt.Errorf("due webhook events: %w", err))...)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, d.o.Concurrency)
	for _, e := range due {
		ep, ok := byTenant[e.Tenant]
		if !ok {
			continue // the endpoint was removed: nothing to deliver to
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outcome, err := d.deliver(ctx, ep, e)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case outcome == delivered:
				rep.Delivered++
			case outcome == abandoned:
				rep.Abandoned++
			default:
				rep.Failed++
			}
		}()
	}
	wg.Wait()
	return rep, errors.Join(errs...)
}

// scanPage is how many jobs one List call reads.
const scanPage = 100

// scan records the events of the tenant's recent jobs.
func (d *Dispatcher) scan(ctx context.Context, ep Endpoint) (int, error) {
	now := d.o.Now()
	oldest := now.Add(-d.o.ScanWindow)
	if ep.Created.After(oldest) {
		oldest = ep.Created // jobs from before the registration are not announced
	}
	recorded, cursor := 0, ""
	for {
		jobs, next, err := d.o.Jobs.List(ctx, ep.Tenant, "", cursor, scanPage)
		if err != nil {
			return recorded, err
		}
		for i := range jobs {
			j := &jobs[i]
			if j.Created.Before(oldest) {
				return recorded, nil
			}
			e, ok, err := ep.event(j, now, d.o.HeldAfter)
			if err != nil {
				return recorded, err
			}
			if !ok || d.known(e.Tenant+"/"+e.ID) {
				continue
			}
			if err := d.o.Store.AddEvent(ctx, e); err != nil {
				return recorded, err
			}
			d.remember(e.Tenant+"/"+e.ID, j.Created)
			recorded++
		}
		if next == "" {
			return recorded, nil
		}
		cursor = next
	}
}

// forget drops what is older than the scan window.
func (d *Dispatcher) forget(oldest time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, created := range d.recorded {
		if created.Before(oldest) {
			delete(d.recorded, k)
		}
	}
}

func (d *Dispatcher) known(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.recorded[key]
	return ok
}

func (d *Dispatcher) remember(key string, created time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recorded[key] = created
}

// eventType is the event a job's state calls for, or "".
func eventType(j *batch.Job, now time.Time, heldAfter time.Duration) string {
	switch {
	case j.State == batch.Harvested:
		return map[batch.State]string{batch.Completed: TypeCompleted, batch.Failed: TypeFailed,
			batch.Expired: TypeExpired, batch.Cancelled: TypeCancelled}[j.Final]
	case fallingBack(j):
		return TypeFallback
	case j.State == batch.Held:
		for i := range j.Parts {
			if p := &j.Parts[i]; !p.HeldSince.IsZero() && now.Sub(p.HeldSince) >= heldAfter {
				return TypeHeld
			}
		}
	}
	return ""
}

// fallingBack reports whether a part of the unharvested job j has started
// its deadline fallback.
func fallingBack(j *batch.Job) bool {
	for i := range j.Parts {
		if j.Parts[i].Fallback != nil {
			return true
		}
	}
	return false
}

// event is the event a job calls for at the endpoint, if any: none for a
// job from before the registration.
func (ep Endpoint) event(j *batch.Job, now time.Time, heldAfter time.Duration) (Event, bool, error) {
	if j.Tenant != ep.Tenant || j.Created.Before(ep.Created) {
		return Event{}, false, nil
	}
	typ := eventType(j, now, heldAfter)
	if typ == "" {
		return Event{}, false, nil
	}
	e, err := newEvent(j, typ, now)
	return e, err == nil, err
}

// payload is an event's body: the job's state, counts and usage, never
// its prompts or answers.
type payload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      struct {
		BatchID    string       `json:"batch_id"`
		Job        string       `json:"job"`
		Tenant     string       `json:"tenant"`
		Alias      string       `json:"alias"`
		State      batch.State  `json:"state"`
		Final      batch.State  `json:"final,omitempty"`
		Items      int          `json:"items"`
		Counts     batch.Counts `json:"counts"`
		Usage      ledger.Usage `json:"usage"`
		HeldReason string       `json:"held_reason,omitempty"`
		CompleteBy time.Time    `json:"complete_by,omitzero"`
		// FallbackReason is the deadline rule's reason for the first part
		// that fell back (held, validating, no_progress, slow, late).
		FallbackReason string    `json:"fallback_reason,omitempty"`
		Created        time.Time `json:"created"`
		Harvested      time.Time `json:"harvested_at,omitzero"`
	} `json:"data"`
}

func newEvent(j *batch.Job, typ string, now time.Time) (Event, error) {
	var p payload
	p.Type, p.Timestamp = typ, now.UTC()
	p.Data.BatchID, p.Data.Job, p.Data.Tenant, p.Data.Alias = "batch_"+j.ID, j.ID, j.Tenant, j.Alias
	p.Data.State, p.Data.Final, p.Data.Items = j.State, j.Final, j.Items
	p.Data.Counts, p.Data.Usage, p.Data.Created, p.Data.Harvested = j.Counts(), j.Usage(), j.Created, j.HarvestedAt
	p.Data.CompleteBy = j.CompleteBy
	for i := range j.Parts {
		if p.Data.HeldReason == "" {
			p.Data.HeldReason = j.Parts[i].HeldReason
		}
		if f := j.Parts[i].Fallback; f != nil && p.Data.FallbackReason == "" {
			p.Data.FallbackReason = f.Reason
		}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return Event{}, fmt.Errorf("webhook payload: %w", err)
	}
	return Event{Tenant: j.Tenant, ID: "msg_" + j.ID + "_" + typ, Type: typ, Job: j.ID, Payload: body, Created: now.UTC(), NextAttempt: now.UTC()}, nil
}

type outcome int

const (
	failed outcome = iota
	delivered
	abandoned
)

// deliver tries an event once and records the attempt.
func (d *Dispatcher) deliver(ctx context.Context, ep Endpoint, e Event) (outcome, error) {
	start := d.o.Now()
	a := Attempt{At: start.UTC()}
	status, err := d.send(ctx, ep, &e, start)
	a.Status, a.Duration = status, d.o.Now().Sub(start)
	if err != nil {
		a.Error = err.Error()
	}
	res := failed
	e.Attempts = append(e.Attempts, a)
	switch n := len(e.Attempts); {
	case err == nil && status >= 200 && status < 300:
		e.Delivered, res = true, delivered
	case n > len(d.o.Backoff):
		e.Abandoned, res = true, abandoned
	default:
		e.NextAttempt = start.Add(d.o.Backoff[n-1]).UTC()
	}
	if _, err := d.o.Store.UpdateEvent(ctx, e); err != nil {
		return res, fmt.Errorf("record webhook attempt %s: %w", e.ID, err)
	}
	ev := zerolog.Ctx(ctx).Info()
	if res != delivered {
		ev = zerolog.Ctx(ctx).Warn()
	}
	ev.Str("tenant", e.Tenant).Str("webhook_id", e.ID).Str("type", e.Type).Int("attempt", len(e.Attempts)).
		Int("status", status).Str("error", a.Error).Bool("delivered", e.Delivered).Bool("abandoned", e.Abandoned).Msg("webhook attempt")
	return res, nil
}

// send posts the signed event; status is 0 when no answer came.
func (d *Dispatcher) send(ctx context.Context, ep Endpoint, e *Event, now time.Time) (int, error) {
	ts := now.Unix()
	sig, err := Sign(ep.Secret, e.ID, ts, e.Payload)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(e.Payload))
	if err != nil {
		return 0, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "offpath-webhooks")
	req.Header.Set("webhook-id", e.ID)
	req.Header.Set("webhook-timestamp", fmt.Sprint(ts))
	req.Header.Set("webhook-signature", sig)
	res, err := d.o.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the tenant's own; keep the log line short
		}
		return 0, fmt.Errorf("webhook post: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	return res.StatusCode, nil
}

// CheckURL accepts https URLs, and http to loopback for local development.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || len(raw) > 2048 {
		return errors.New("url: an absolute https URL without credentials, at most 2,048 bytes")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
	}
	return errors.New("url: https is required (http only to a loopback address)")
}

// Register makes a tenant's endpoint with a new secret, shown once.
func Register(tenantID, rawURL string, now time.Time, rnd io.Reader) (Endpoint, error) {
	if err := CheckURL(rawURL); err != nil {
		return Endpoint{}, err
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	secret, err := NewSecret(rnd)
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Tenant: tenantID, URL: rawURL, Secret: secret, Created: now.UTC()}, nil
}
