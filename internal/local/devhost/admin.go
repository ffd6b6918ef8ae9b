package devhost

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/local/blobwatch"
	"github.com/offpath/offpath/internal/local/sbemu"
)

// serveAdmin implements the host's POST /admin/functions/{name}, which runs
// a non-HTTP function now (master key required). The body's "input" is the
// trigger value: ignored for timers, the message body for Service Bus, the
// blob path "container/name" for blobs.
func (h *Host) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if !h.keys.allows(r, "admin") {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, "/admin/functions/")
	if !ok || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	fn := h.function(name)
	if fn == nil || fn.Trigger().Type == "httpTrigger" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Input string `json:"input"`
	}
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)); len(b) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, "body must be {\"input\": \"...\"}", http.StatusBadRequest)
			return
		}
	}
	// The host answers 202 and runs the function in the background.
	go h.Fire(context.WithoutCancel(r.Context()), fn.Name, body.Input)
	w.WriteHeader(http.StatusAccepted)
}

// Fire runs the non-HTTP function name once now, as the admin endpoint does.
func (h *Host) Fire(ctx context.Context, name, input string) error {
	fn := h.function(name)
	if fn == nil {
		return errors.New("no function " + name)
	}
	ctx, cancel := context.WithTimeout(ctx, max(h.invoker.timeout, time.Minute))
	defer cancel()
	switch fn.Trigger().Type {
	case "timerTrigger":
		t := h.timers[name]
		t.fire(ctx, false, h.opts.Now())
		return nil
	case "serviceBusTrigger":
		d := &sbemu.Delivery{Message: sbemu.Message{Body: []byte(input), MessageID: newID()}, DeliveryCount: 1,
			EnqueuedTime: h.opts.Now(), ExpiresAt: h.opts.Now().Add(sbemu.DefaultTTL), LockToken: newID()}
		_, err := h.execute(ctx, fn, h.serviceBusEnvelope(fn, d), nil, deliveryEvent(d))
		return err
	case "blobTrigger":
		container, blobName, _ := strings.Cut(input, "/")
		p, err := blobwatch.ParsePath(fn.Trigger().Path)
		if err != nil {
			return err
		}
		tokens, _ := p.Match(blobName)
		return h.invokeBlob(ctx, fn, container, blobName, tokens, "")
	}
	return errors.New("function " + name + " cannot be fired")
}

// escapePath escapes each segment of a blob name but keeps its slashes, as
// the host's Uri does.
func escapePath(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// serveDevhost is the dev host's own API (master key): send a message to a
// Service Bus stand-in queue, and look at a queue's counts and dead letters.
//
//	POST /devhost/servicebus/{queue}   body = message body; Content-Type and
//	                                   X-Correlation-Id become its properties
//	GET  /devhost/servicebus/{queue}   {"active": n, "deadLettered": n, "deadLetters": [...]}
func (h *Host) serveDevhost(w http.ResponseWriter, r *http.Request) {
	if !h.keys.allows(r, "admin") {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	queue, ok := strings.CutPrefix(r.URL.Path, "/devhost/servicebus/")
	if !ok || queue == "" || strings.Contains(queue, "/") {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m := sbemu.Message{Body: body, ContentType: r.Header.Get("Content-Type"), CorrelationID: r.Header.Get("X-Correlation-Id")}
		switch err := h.opts.broker.Send(r.Context(), queue, m); {
		case errors.Is(err, sbemu.ErrTooLarge):
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		case errors.Is(err, sbemu.ErrInvalidQueueName), errors.Is(err, sbemu.ErrInvalidMessage):
			http.Error(w, err.Error(), http.StatusBadRequest)
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	case http.MethodGet:
		active, dead, err := h.opts.broker.Count(r.Context(), queue)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		letters, err := h.opts.broker.DeadLetters(r.Context(), queue, 32)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		type letter struct {
			MessageID, Reason, Description string
			DeliveryCount                  int
		}
		out := struct {
			Active       int      `json:"active"`
			DeadLettered int      `json:"deadLettered"`
			DeadLetters  []letter `json:"deadLetters"`
		}{Active: active, DeadLettered: dead, DeadLetters: []letter{}}
		for _, d := range letters {
			out.DeadLetters = append(out.DeadLetters, letter{d.MessageID, d.DeadLetterReason, d.DeadLetterErrorDescription, d.DeliveryCount})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	default:
		w.Header().Set("Allow", "GET, POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}
