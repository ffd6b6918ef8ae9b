package invoke

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ServiceBusMessage is a serviceBusTrigger invocation (single message).
type ServiceBusMessage struct {
	Body                  []byte
	MessageID             string
	CorrelationID         string
	ContentType           string
	Subject               string
	DeliveryCount         int
	SequenceNumber        int64
	EnqueuedTime          time.Time
	ExpiresAt             time.Time
	LockToken             string
	DeadLetterSource      string
	ApplicationProperties map[string]any
}

// ServiceBus decodes the Service Bus trigger bound as binding. With an
// error, the message returned holds what could be read before it.
func (r *Request) ServiceBus(binding string) (ServiceBusMessage, error) {
	var m ServiceBusMessage
	var err error
	strs := []struct {
		key string
		dst *string
	}{
		{"MessageId", &m.MessageID}, {"CorrelationId", &m.CorrelationID},
		{"ContentType", &m.ContentType}, {"Subject", &m.Subject},
		{"LockToken", &m.LockToken}, {"DeadLetterSource", &m.DeadLetterSource},
	}
	for _, s := range strs {
		if *s.dst, err = r.metaString(s.key); err != nil {
			return m, fmt.Errorf("%w: %v", errBadEnvelope, err)
		}
	}
	if m.Subject == "" {
		m.Subject, _ = r.metaString("Label")
	}
	if v, ok := r.Meta("DeliveryCount"); ok {
		n, err := v.Int()
		if err != nil {
			return m, fmt.Errorf("%w: DeliveryCount: %v", errBadEnvelope, err)
		}
		m.DeliveryCount = int(n)
	}
	if v, ok := r.Meta("SequenceNumber"); ok {
		if m.SequenceNumber, err = v.Int(); err != nil {
			return m, fmt.Errorf("%w: SequenceNumber: %v", errBadEnvelope, err)
		}
	}
	if m.EnqueuedTime, err = r.metaTime("EnqueuedTimeUtc", "EnqueuedTime"); err != nil {
		return m, err
	}
	if m.ExpiresAt, err = r.metaTime("ExpiresAtUtc", "ExpiresAt"); err != nil {
		return m, err
	}
	for _, key := range []string{"ApplicationProperties", "UserProperties"} {
		if v, ok := r.Meta(key); ok && !v.IsNull() {
			if err := v.Decode(&m.ApplicationProperties); err != nil {
				return m, fmt.Errorf("%w: %s: %v", errBadEnvelope, key, err)
			}
			break
		}
	}
	v, err := r.trigger(binding)
	if err != nil {
		return m, err
	}
	if m.Body, err = v.Bytes(); err != nil {
		return m, fmt.Errorf("%w: %s: %v", errBadEnvelope, binding, err)
	}
	return m, nil
}

// metaTime decodes the first present key of keys as a timestamp.
func (r *Request) metaTime(keys ...string) (time.Time, error) {
	for _, key := range keys {
		if v, ok := r.Meta(key); ok {
			t, err := v.Time()
			if err != nil {
				return t, fmt.Errorf("%w: %s: %v", errBadEnvelope, key, err)
			}
			return t, nil
		}
	}
	return time.Time{}, nil
}

// Timer is a timerTrigger invocation (the host's TimerInfo).
type Timer struct {
	IsPastDue bool
	// Last, Next and LastUpdated are zero when the host has no schedule
	// status (useMonitor false, or a first run).
	Last, Next, LastUpdated time.Time
}

// Timer decodes the timer trigger bound as binding.
func (r *Request) Timer(binding string) (Timer, error) {
	var t Timer
	v, err := r.trigger(binding)
	if err != nil {
		return t, err
	}
	var info []member
	if len(v) == 0 || v[0] != '{' {
		return t, fmt.Errorf("%w: %s is %s, want a TimerInfo object", errBadEnvelope, binding, kind(v))
	}
	if info, err = members(nil, v); err != nil {
		return t, fmt.Errorf("%w: %s: %v", errBadEnvelope, binding, err)
	}
	if raw, ok := lookup(info, "IsPastDue"); ok {
		if t.IsPastDue, err = Value(raw).Bool(); err != nil {
			return t, fmt.Errorf("%w: IsPastDue: %v", errBadEnvelope, err)
		}
	}
	raw, ok := lookup(info, "ScheduleStatus")
	if !ok || Value(raw).IsNull() {
		return t, nil
	}
	if raw[0] != '{' {
		return t, fmt.Errorf("%w: ScheduleStatus is %s, want an object", errBadEnvelope, kind(raw))
	}
	status, err := members(nil, raw)
	if err != nil {
		return t, fmt.Errorf("%w: ScheduleStatus: %v", errBadEnvelope, err)
	}
	for _, f := range []struct {
		key string
		dst *time.Time
	}{{"Last", &t.Last}, {"Next", &t.Next}, {"LastUpdated", &t.LastUpdated}} {
		if raw, ok := lookup(status, f.key); ok {
			if *f.dst, err = Value(raw).Time(); err != nil {
				return t, fmt.Errorf("%w: ScheduleStatus.%s: %v", errBadEnvelope, f.key, err)
			}
		}
	}
	return t, nil
}

// HTTPRequest is an httpTrigger invocation in envelope mode (no forwarding).
type HTTPRequest struct {
	Method string
	URL    string
	Query  url.Values
	Header http.Header
	Params map[string]string
	Body   []byte
}

type envelopeHTTP struct {
	URL     string              `json:"Url"`
	Method  string              `json:"Method"`
	Query   map[string]string   `json:"Query"`
	Headers map[string][]string `json:"Headers"`
	Params  map[string]*string  `json:"Params"`
	Body    *string             `json:"Body"`
}

// HTTP decodes the HTTP trigger bound as binding. The body is base64 for
// application/octet-stream and multipart/*, text otherwise, as the host sends.
func (r *Request) HTTP(binding string) (HTTPRequest, error) {
	var h HTTPRequest
	v, err := r.trigger(binding)
	if err != nil {
		return h, err
	}
	if len(v) == 0 || v[0] != '{' {
		return h, fmt.Errorf("%w: %s is %s, want a request object", errBadEnvelope, binding, kind(v))
	}
	var e envelopeHTTP
	if err := v.Decode(&e); err != nil {
		return h, fmt.Errorf("%w: %s: %v", errBadEnvelope, binding, err)
	}
	h.Method, h.URL = e.Method, e.URL
	h.Query = url.Values{}
	for k, val := range e.Query {
		h.Query.Set(k, val)
	}
	h.Header = http.Header{}
	for k, vals := range e.Headers {
		for _, val := range vals {
			h.Header.Add(k, val)
		}
	}
	h.Params = map[string]string{}
	for k, p := range e.Params {
		if p != nil {
			h.Params[k] = *p
		}
	}
	if e.Body != nil {
		ct := strings.ToLower(h.Header.Get("Content-Type"))
		if strings.HasPrefix(ct, "application/octet-stream") || strings.HasPrefix(ct, "multipart/") {
			var err error
			if h.Body, err = base64.StdEncoding.DecodeString(*e.Body); err != nil {
				return h, fmt.Errorf("%w: binary body: %v", errBadEnvelope, err)
			}
		} else {
			h.Body = []byte(*e.Body)
		}
	}
	if h.Method == "" {
		return h, fmt.Errorf("%w: %s has no Method", errBadEnvelope, binding)
	}
	return h, nil
}

// isBadEnvelope reports whether err is a protocol-level decoding failure.
func isBadEnvelope(err error) bool { return errors.Is(err, errBadEnvelope) }
