package invoke

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/jsonstr"
	"github.com/offpath/offpath/internal/outcome"
)

// Trigger is the kind of binding that invokes a function; it decides how a
// transient failure is answered.
type Trigger int

// The trigger kinds offpath uses.
const (
	ServiceBusTrigger Trigger = iota
	BlobTrigger
	TimerTrigger
	HTTPTrigger // envelope mode; forwarded HTTP functions use Mux.Forward
)

func (t Trigger) String() string {
	switch t {
	case ServiceBusTrigger:
		return "serviceBus"
	case BlobTrigger:
		return "blob"
	case TimerTrigger:
		return "timer"
	case HTTPTrigger:
		return "http"
	}
	return "unknown"
}

// Func handles one envelope invocation. It returns outputs and, for anything
// but Done, an error classified by package outcome. The context carries the
// invocation's deadline and logger (zerolog.Ctx).
type Func func(ctx context.Context, req *Request) (Result, error)

// Options tune the protocol layer.
type Options struct {
	// Timeout is each invocation's deadline; keep it below host.json's
	// functionTimeout so that the handler answers before the host gives up.
	// Default 4m30s (Consumption's 5-minute default less a margin).
	Timeout time.Duration
	// MaxBody caps an envelope's size; a larger one is answered 413.
	// Default 32 MiB (a blob trigger inlines its blob as base64).
	MaxBody int64
	// Rejections records the invocations whose data cannot be decoded. Nil:
	// they are only logged.
	Rejections Recorder
}

// Rejection is an invocation whose data cannot be decoded (see Mux): no
// retry can fix it, so it is answered 2xx and recorded.
type Rejection struct {
	Function     string
	InvocationID string
	Trigger      Trigger
	// Binding is the trigger binding's name, if it was registered.
	Binding string
	// Reason says what is wrong, never what the payload holds.
	Reason string
	// Request is what could be read of the envelope, for the recorder to
	// attribute the rejection (a blob name, a message id); it may be empty
	// and is only valid during the call.
	Request *Request
}

// Recorder records rejections. An error is a failure a retry can fix: the
// invocation is then answered as transient, so nothing is lost unrecorded.
type Recorder interface {
	RecordRejection(ctx context.Context, r Rejection) error
}

// Mux routes the host's requests: GET / (readiness), POST /{Function}
// (envelopes) and forwarded HTTP requests by path prefix.
type Mux struct {
	logger  zerolog.Logger
	opts    Options
	funcs   map[string]route
	forward []forwardRoute
	bufs    sync.Pool
}

type route struct {
	trigger Trigger
	binding string
	fn      Func
}

type forwardRoute struct {
	prefix string
	h      http.Handler
}

// NewMux returns an empty Mux logging to logger.
func NewMux(logger zerolog.Logger, opts Options) *Mux {
	if opts.Timeout <= 0 {
		opts.Timeout = 4*time.Minute + 30*time.Second
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 32 << 20
	}
	return &Mux{
		logger: logger,
		opts:   opts,
		funcs:  map[string]route{},
		bufs:   sync.Pool{New: func() any { return new(bytes.Buffer) }},
	}
}

// Handle registers fn as the function name (its folder name, case-sensitive).
// fn decodes its trigger itself; prefer HandleTrigger.
func (m *Mux) Handle(name string, trigger Trigger, fn Func) {
	m.HandleTrigger(name, trigger, "", fn)
}

// HandleTrigger registers fn as the function name whose trigger binding is
// called binding (as in its function.json). The Mux decodes the trigger
// before fn runs, so an envelope whose trigger data cannot be decoded is
// rejected by the same rule for every function, whether or not fn would
// have read it.
func (m *Mux) HandleTrigger(name string, trigger Trigger, binding string, fn Func) {
	m.funcs[name] = route{trigger: trigger, binding: binding, fn: fn}
}

// Forward serves HTTP functions that run in forwarding mode: the host sends
// the original request, path prefix included (e.g. /api/), and copies h's
// response back to the caller.
func (m *Mux) Forward(prefix string, h http.Handler) {
	m.forward = append(m.forward, forwardRoute{prefix: prefix, h: h})
}

// ServeHTTP implements http.Handler.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`))
		return
	}
	for _, f := range m.forward {
		if strings.HasPrefix(r.URL.Path, f.prefix) {
			m.serveForward(w, r, f.h)
			return
		}
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	rt, ok := m.funcs[name]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no function %q", name))
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "invocations are POST")
	default:
		m.serveInvocation(w, r, name, rt)
	}
}

// serveInvocation runs one envelope invocation: recover → logger → timeout.
func (m *Mux) serveInvocation(w http.ResponseWriter, r *http.Request, name string, rt route) {
	start := time.Now()
	req := Request{InvocationID: r.Header.Get("X-Azure-Functions-InvocationId"), Function: name}
	logs := &logCollector{}
	log := m.logger.With().Str("invocation_id", req.InvocationID).Str("function", name).Logger().Hook(logs)

	buf := m.bufs.Get().(*bytes.Buffer)
	defer m.putBuffer(buf)
	if status, err := m.readBody(buf, r); err != nil {
		log.Warn().Err(err).Str("trigger", rt.trigger.String()).Msg("envelope refused")
		writeError(w, status, err.Error())
		return
	}
	err := parseRequest(&req, buf.Bytes())
	if errors.Is(err, errNotEnvelope) {
		log.Warn().Err(err).Str("trigger", rt.trigger.String()).Msg("envelope refused")
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}

	ctx, cancel := context.WithTimeout(log.WithContext(r.Context()), m.opts.Timeout)
	if err == nil && rt.binding != "" {
		err = req.check(rt.trigger, rt.binding)
	}
	var res Result
	if err == nil {
		res, err = call(ctx, rt.fn, &req)
	}
	if isBadEnvelope(err) {
		res, err = Result{}, m.reject(ctx, &req, rt, err)
	}
	cancel()

	kind := outcome.Of(err)
	ev := log.Info()
	switch kind {
	case outcome.Refused, outcome.Rejected:
		ev = log.Warn().Str("reason", err.Error())
	case outcome.Transient:
		ev = log.Error().Err(err)
	}
	ev.Str("trigger", rt.trigger.String()).Str("outcome", kind.String()).
		Dur("duration_ms", time.Since(start)).Msg("invocation")

	status, res := m.reply(rt.trigger, kind, res, err)
	if status != http.StatusOK {
		writeError(w, status, err.Error())
		return
	}
	buf.Reset()
	body, encErr := appendReply(buf.AvailableBuffer(), res, logs.lines)
	if encErr != nil {
		log.Error().Err(encErr).Msg("reply not encodable")
		writeError(w, http.StatusInternalServerError, encErr.Error())
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// reject is the protocol's one rule for data no retry can fix: the
// invocation is a rejection, answered 2xx so that the host completes the
// trigger (a Service Bus message is not redelivered, let alone
// dead-lettered; a blob is not retried into the poison queue), and recorded.
// Only when the recording fails is it transient: a retry can fix that.
func (m *Mux) reject(ctx context.Context, req *Request, rt route, cause error) error {
	rejected := outcome.Reject("undecodable invocation", cause)
	if m.opts.Rejections == nil {
		return rejected
	}
	err := m.opts.Rejections.RecordRejection(ctx, Rejection{Function: req.Function, InvocationID: req.InvocationID,
		Trigger: rt.trigger, Binding: rt.binding, Reason: cause.Error(), Request: req})
	if err != nil {
		return fmt.Errorf("record the rejection (%v): %w", cause, err)
	}
	return rejected
}

// check decodes the trigger binding by its kind, to find out whether it
// can be, and keeps what it decoded for the function's own call.
func (r *Request) check(t Trigger, binding string) error {
	var v any
	var err error
	switch t {
	case ServiceBusTrigger:
		v, err = r.decodeServiceBus(binding)
	case BlobTrigger:
		v, err = r.decodeBlob(binding)
	case TimerTrigger:
		v, err = r.decodeTimer(binding)
	case HTTPTrigger:
		v, err = r.decodeHTTP(binding)
	}
	if err == nil {
		r.decoded = decoded{binding: binding, v: v}
	}
	return err
}

// decoded is the trigger binding the Mux decoded before the function ran.
type decoded struct {
	binding string
	v       any
}

// cached returns the trigger binding the Mux decoded, if it is binding's.
func cached[T any](r *Request, binding string) (T, bool) {
	v, ok := r.decoded.v.(T)
	return v, ok && r.decoded.binding == binding
}

// reply maps an outcome to the status and result the host receives: the one
// place where done / refused / rejected / transient meet the wire.
func (m *Mux) reply(t Trigger, kind outcome.Kind, res Result, err error) (int, Result) {
	if kind != outcome.Transient && kind != outcome.Done && t == HTTPTrigger && res.Outputs["res"] == nil {
		status := http.StatusBadRequest
		if kind == outcome.Refused {
			status = http.StatusUnprocessableEntity
		}
		return http.StatusOK, Result{Outputs: map[string]Output{"res": errorResponse(status, err.Error(), 0)}}
	}
	if kind != outcome.Transient {
		return http.StatusOK, res
	}
	if t == HTTPTrigger {
		// The caller, not the host, should retry: tell it when.
		after := max(outcome.RetryAfter(err), time.Second)
		return http.StatusOK, Result{Outputs: map[string]Output{"res": errorResponse(http.StatusServiceUnavailable, "temporarily unavailable, retry later", after)}}
	}
	return http.StatusInternalServerError, Result{}
}

func errorResponse(status int, msg string, retryAfter time.Duration) HTTPResponse {
	h := map[string]string{"Content-Type": "application/json"}
	if retryAfter > 0 {
		h["Retry-After"] = strconv.Itoa(int((retryAfter + time.Second - 1) / time.Second))
	}
	return HTTPResponse{StatusCode: status, Headers: h, Body: string(jsonstr.Append([]byte(`{"error":`), msg)) + "}"}
}

// call runs fn, turning a panic into a transient error: a panic must never
// crash the handler, and retrying is the safe default.
func call(ctx context.Context, fn Func, req *Request) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			zerolog.Ctx(ctx).Error().Str("stack", string(debug.Stack())).Msgf("panic: %v", p)
			res, err = Result{}, fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx, req)
}

// readBody reads the envelope into buf, refusing oversized ones early.
func (m *Mux) readBody(buf *bytes.Buffer, r *http.Request) (int, error) {
	if r.ContentLength > m.opts.MaxBody {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("envelope of %d bytes is over the %d-byte limit", r.ContentLength, m.opts.MaxBody)
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(r.Body, m.opts.MaxBody+1))
	if err != nil {
		return http.StatusBadRequest, fmt.Errorf("read envelope: %w", err)
	}
	if n > m.opts.MaxBody {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("envelope is over the %d-byte limit", m.opts.MaxBody)
	}
	return http.StatusOK, nil
}

func (m *Mux) putBuffer(buf *bytes.Buffer) {
	if buf.Cap() > 1<<20 {
		return // let large envelopes' memory go
	}
	buf.Reset()
	m.bufs.Put(buf)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, append(jsonstr.Append([]byte(`{"error":`), msg), '}'))
}

// logCollector copies an invocation's log messages into the reply's Logs, so
// the host records them against the invocation (Application Insights traces).
type logCollector struct {
	mu    sync.Mutex
	lines []string
}

func (c *logCollector) Run(_ *zerolog.Event, level zerolog.Level, msg string) {
	if msg == "" || level < zerolog.InfoLevel {
		return
	}
	c.mu.Lock()
	c.lines = append(c.lines, level.String()+": "+msg)
	c.mu.Unlock()
}
