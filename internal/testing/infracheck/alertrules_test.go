package infracheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/testing/alertrules"
)

// alertNames returns the alert names offpath's code declares: every string
// constant named Alert… under internal/ (outside tests), by file.
func alertNames(root string) (map[string]string, error) {
	decl := regexp.MustCompile(`(?m)^\s*(?:const\s+)?(Alert[A-Z]\w*)\s*=\s*"([a-z0-9_]+)"`)
	names := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			names[string(m[2])] = filepath.ToSlash(path) + " " + string(m[1])
		}
		return nil
	})
	return names, err
}

// traces is what Application Insights receives from one invocation of a
// custom handler: the reply's Logs strings (only when the reply is 2xx)
// and the handler's stdout lines (host logs, always).
type traces struct {
	status int
	logs   []string
	stdout []string
}

func (tr traces) all() []string { return append(slices.Clone(tr.logs), tr.stdout...) }

// invokeTimer registers fn as a timer function on a real invoke.Mux (with
// a root logger writing JSON lines to stdout, as the handler's does), sends
// it a timer envelope the way the Functions host does, and returns the
// traces that invocation produces.
func invokeTimer(t *testing.T, fn invoke.Func) traces {
	t.Helper()
	var stdout bytes.Buffer
	mux := invoke.NewMux(zerolog.New(&stdout).With().Timestamp().Str("service", "offpath-handler").Logger(), invoke.Options{})
	mux.Handle("alerting", invoke.TimerTrigger, fn)
	body := `{"Data":{"timer":{"Schedule":{"AdjustForDST":true},"ScheduleStatus":null,"IsPastDue":false}},"Metadata":{"sys":{"MethodName":"alerting","UtcNow":"2026-12-01T07:00:00.0012345Z","RandGuid":"7c9f0f8e-8d5f-4b8e-9b0e-0c1d2e3f4a5b"}}}`
	req := httptest.NewRequest(http.MethodPost, "/alerting", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Azure-Functions-InvocationId", "5f0e7a1c-0000-4000-8000-000000000001")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	tr := traces{status: rec.Code}
	if rec.Code >= 200 && rec.Code <= 299 {
		var reply struct {
			Logs []string `json:"Logs"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
			t.Fatalf("reply %s: %v", rec.Body.Bytes(), err)
		}
		tr.logs = reply.Logs
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if l != "" {
			tr.stdout = append(tr.stdout, l)
		}
	}
	return tr
}

// wantRule is which rule must fire for each alert name; a name the code
// declares that is not here must be caught by offpath-other-alert.
var wantRule = map[string]string{
	"batch_expired":               "offpath-job-expired",
	"batch_failed":                "offpath-job-failed",
	"azure_auth":                  "offpath-job-failed",
	"batch_overdue":               "offpath-job-overdue",
	"held_too_long":               "offpath-job-overdue",
	"output_expiring_unharvested": "offpath-job-overdue",
	"second_door":                 "offpath-second-door",
	"morning_report_missing":      "offpath-morning-report-missing",
	"nightly_failed":              "offpath-morning-report-missing",
}

const (
	otherAlertRule    = "offpath-other-alert"
	noMorningReport   = "offpath-no-morning-report"
	futureAlertName   = "some_alert_added_later"
	alertMessageProse = "batch b1 of job j1: <validation> failed & nothing ran"
)

// TestAlertRules_MatchWhatReachesApplicationInsights runs every log alert
// rule's query on the traces the handler really produces for each alert:
// the alert raised by package alert's Sender inside a function served by
// the real invoke.Mux, its reply's Logs and its stdout. Each alert fires
// exactly its rule, from either channel; the morning_report_written event
// is what the no-morning-report rule counts; nothing else fires anything.
func TestAlertRules_MatchWhatReachesApplicationInsights(t *testing.T) {
	t.Parallel()
	rules, err := alertrules.Load(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var ruleNames []string
	for _, r := range rules {
		ruleNames = append(ruleNames, r.Name)
	}
	needed := []string{otherAlertRule, noMorningReport}
	for _, r := range wantRule {
		needed = append(needed, r)
	}
	for _, want := range needed {
		if !slices.Contains(ruleNames, want) {
			t.Fatalf("alerts.bicep has no rule %s (rules: %v)", want, ruleNames)
		}
	}
	declared, err := alertNames(repoRoot + "/internal")
	if err != nil {
		t.Fatal(err)
	}
	for name := range wantRule {
		if _, ok := declared[name]; !ok {
			t.Errorf("wantRule names %s, which no Alert… constant under internal/ declares", name)
		}
	}
	if len(declared) < len(wantRule) {
		t.Fatalf("found only %d alert names in the code: %v", len(declared), declared)
	}
	alertRules := slices.DeleteFunc(slices.Clone(rules), func(r alertrules.Rule) bool { return r.Name == noMorningReport })

	names := append(sortedKeys(declared), futureAlertName)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := wantRule[name]
			if want == "" {
				want = otherAlertRule
			}
			tr := invokeTimer(t, func(ctx context.Context, _ *invoke.Request) (invoke.Result, error) {
				alert.New("", nil, nil).Raise(ctx, alert.Alert{Name: name, Tenant: "contoso", Job: "j1", Message: alertMessageProse,
					Fields: map[string]any{"part": 0}})
				return invoke.Result{}, nil
			})
			if tr.status != http.StatusOK || len(tr.logs) == 0 {
				t.Fatalf("invocation answered %d with Logs %q", tr.status, tr.logs)
			}
			for _, ch := range []struct {
				channel string
				lines   []string
			}{{"reply Logs", tr.logs}, {"stdout", tr.stdout}} {
				fired := map[string]int{}
				for _, line := range ch.lines {
					for _, r := range alertrules.Fired(alertRules, line) {
						fired[r]++
					}
					if m := alertrules.Fired(rules, line); slices.Contains(m, noMorningReport) {
						t.Errorf("%s line %q counts as a morning report", ch.channel, line)
					}
				}
				if len(fired) != 1 || fired[want] == 0 {
					t.Errorf("%s: rules fired %v, want only %s; lines:\n%s", ch.channel, fired, want, strings.Join(ch.lines, "\n"))
				}
			}
		})
	}

	t.Run("failed invocation", func(t *testing.T) {
		t.Parallel()
		// A function that raises and then fails (nightly-summaries does):
		// the host drops a non-2xx reply's Logs, so the host log of stdout
		// is what carries the alert.
		tr := invokeTimer(t, func(ctx context.Context, _ *invoke.Request) (invoke.Result, error) {
			alert.New("", nil, nil).Raise(ctx, alert.Alert{Name: nightly.AlertRunFailed, Message: "the nightly summaries of 2026-11-30 failed"})
			return invoke.Result{}, errors.New("storage unavailable")
		})
		if tr.status < 500 || tr.logs != nil {
			t.Fatalf("invocation answered %d with Logs %q, want 5xx and no Logs", tr.status, tr.logs)
		}
		n := 0
		for _, line := range tr.stdout {
			if slices.Contains(alertrules.Fired(alertRules, line), wantRule[nightly.AlertRunFailed]) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d stdout lines fire %s, want 1:\n%s", n, wantRule[nightly.AlertRunFailed], strings.Join(tr.stdout, "\n"))
		}
	})

	t.Run("morning report written", func(t *testing.T) {
		t.Parallel()
		tr := invokeTimer(t, func(ctx context.Context, _ *invoke.Request) (invoke.Result, error) {
			zerolog.Ctx(ctx).Info().Str("event", nightly.EventReportWritten).Str("day", "2026-11-30").
				Msg(alert.EventMessage(nightly.EventReportWritten, "morning report written"))
			return invoke.Result{}, nil
		})
		for _, ch := range [][]string{tr.logs, tr.stdout} {
			n := 0
			for _, line := range ch {
				m := alertrules.Fired(rules, line)
				if slices.Contains(m, noMorningReport) {
					n++
				}
				if len(slices.DeleteFunc(m, func(r string) bool { return r == noMorningReport })) > 0 {
					t.Errorf("the event line %q fires alert rules %v", line, m)
				}
			}
			if n != 1 {
				t.Errorf("%d lines count as a morning report, want 1: %q", n, ch)
			}
		}
	})

	t.Run("webhook failure and ordinary errors", func(t *testing.T) {
		t.Parallel()
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusBadGateway)
		}))
		t.Cleanup(failing.Close)
		tr := invokeTimer(t, func(ctx context.Context, _ *invoke.Request) (invoke.Result, error) {
			// Raise through a failing webhook: the warning names the alert
			// in a field, and must not fire a second time.
			alert.New(failing.URL, nil, nil).Raise(ctx, alert.Alert{Name: "batch_failed", Message: "part failed"})
			zerolog.Ctx(ctx).Error().Str("alert_like", "batch_failed").Msg("a plain error mentioning batch_failed")
			return invoke.Result{}, nil
		})
		for _, ch := range [][]string{tr.logs, tr.stdout} {
			fired := 0
			for _, line := range ch {
				fired += len(alertrules.Fired(alertRules, line))
			}
			if fired != 1 {
				t.Errorf("rules fired %d times on %q, want once (the alert itself)", fired, ch)
			}
		}
	})
}
