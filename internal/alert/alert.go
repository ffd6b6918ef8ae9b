// Package alert raises operational alerts: conditions an operator must act
// on (a batch job failed or expired, output about to be lost, a job held
// for hours). An alert is an error log event whose message starts with a
// stable marker, "offpath-alert name=<name>:" (and which carries the name
// in an "alert" field too), and, when a webhook URL is configured, a JSON
// POST to it, and, when a Recorder is given, a row in a record of raised
// alerts that the operator's console reads (package tablestore's Alerts).
// Delivery to the webhook and the record are best effort and bounded in
// time: the log line is the alert of record.
//
// The marker is in the message because the message is all that reaches
// Application Insights from a custom handler: the Functions host records
// the strings of an invocation reply's Logs (the message, at Information
// level, without the fields or the level) and the handler's stdout lines
// as host logs, both as plain trace text. The log-based alert rules
// (infra/modules/alerts.bicep) select on the marker; so do they on
// EventMessage's marker for events whose absence is an alert.
package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

// Alert is one raised condition. Fields carry ids and numbers, never
// prompts, answers or credentials.
type Alert struct {
	// Name is the stable alert name, e.g. "batch_failed".
	Name    string         `json:"alert"`
	Tenant  string         `json:"tenant,omitempty"`
	Job     string         `json:"job,omitempty"`
	Message string         `json:"message"`
	Fields  map[string]any `json:"fields,omitempty"`
	At      time.Time      `json:"at"`
}

// Recorder keeps a record of raised alerts (package tablestore's Alerts).
type Recorder interface {
	Record(ctx context.Context, a Alert) error
}

// Recorded is an alert as the record keeps it, with its id.
type Recorded struct {
	ID string `json:"id"`
	Alert
}

// ValidID says whether s has the shape of a recorded alert's id: 19
// digits, a hyphen and 8 lower-case hex digits.
func ValidID(s string) bool {
	if len(s) != 28 || s[19] != '-' {
		return false
	}
	for i, c := range []byte(s) {
		switch {
		case i == 19:
		case i < 19 && c >= '0' && c <= '9':
		case i > 19 && (c >= '0' && c <= '9' || c >= 'a' && c <= 'f'):
		default:
			return false
		}
	}
	return true
}

// Sender logs alerts, records them and posts them to a webhook.
type Sender struct {
	webhook string
	client  *http.Client
	record  Recorder
}

// New returns a Sender; webhook may be empty (no webhook) and record nil
// (no record). client nil means a client with a 5-second timeout.
func New(webhook string, client *http.Client, record Recorder) *Sender {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &Sender{webhook: webhook, client: client, record: record}
}

// sendTimeout bounds the record's write and the webhook's POST, each.
const sendTimeout = 5 * time.Second

// Raise logs a at error level on the context's logger, records it and
// posts it to the webhook, where there are a record and a webhook. A zero
// At is now.
func (s *Sender) Raise(ctx context.Context, a Alert) {
	Log(ctx, a)
	if s == nil {
		return
	}
	if a.At.IsZero() {
		a.At = time.Now().UTC()
	}
	if s.record != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
		err := s.record.Record(rctx, a)
		cancel()
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("alert", a.Name).Msg("alert not recorded")
		}
	}
	if s.webhook == "" {
		return
	}
	if err := s.post(ctx, a); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("alert", a.Name).Msg("alert webhook failed")
	}
}

// markerPrefix and eventPrefix start the markers of alerts and events.
const (
	markerPrefix = "offpath-alert name="
	eventPrefix  = "offpath-event name="
)

// Marker is the text that starts the log message of every alert named
// name: "offpath-alert name=<name>:". The colon ends the name, so that a
// rule looking for one name never matches another that starts with it.
func Marker(name string) string { return markerPrefix + name + ":" }

// EventMessage returns msg marked as the operational event name, e.g.
// "offpath-event name=morning_report_written: morning report written",
// for log lines whose absence an alert rule watches for.
func EventMessage(name, msg string) string { return eventPrefix + name + ": " + msg }

// Log writes the alert's log event only.
func Log(ctx context.Context, a Alert) {
	ev := zerolog.Ctx(ctx).Error().Str("alert", a.Name)
	if a.Tenant != "" {
		ev = ev.Str("tenant", a.Tenant)
	}
	if a.Job != "" {
		ev = ev.Str("job", a.Job)
	}
	if len(a.Fields) > 0 {
		ev = ev.Fields(a.Fields)
	}
	msg := Marker(a.Name)
	if a.Message != "" {
		msg += " " + a.Message
	}
	ev.Msg(msg)
}

func (s *Sender) post(ctx context.Context, a Alert) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode alert: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.webhook, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("alert webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("post alert: %w", err)
	}
	res.Body.Close()
	if res.StatusCode >= 300 {
		return fmt.Errorf("post alert: webhook answered %d", res.StatusCode)
	}
	return nil
}
