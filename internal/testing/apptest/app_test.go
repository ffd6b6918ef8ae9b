package apptest

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ncrontab"
)

// TestWriteApp_SettingDefaults: a %SETTING% that a function.json references
// and the test leaves unset gets a default, one that never fires for a
// timer's schedule; a setting the test sets is kept.
func TestWriteApp_SettingDefaults(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("host.json", `{"version": "2.0"}`)
	write("models.json", `{}`)
	write("functions/nightly-summaries/function.json",
		`{"bindings": [{"type": "timerTrigger", "direction": "in", "name": "timer", "schedule": "%OFFPATH_TICKETS_SCHEDULE%"}]}`)
	write("functions/batch-poll/function.json",
		`{"bindings": [{"type": "timerTrigger", "direction": "in", "name": "timer", "schedule": "%OFFPATH_BATCH_POLL_SCHEDULE%"}]}`)
	write("functions/work/function.json",
		`{"bindings": [{"type": "serviceBusTrigger", "direction": "in", "name": "m", "queueName": "%OFFPATH_WORK_QUEUE%", "connection": "ServiceBus"}]}`)

	dir := t.TempDir()
	replaced := `{"bindings": [{"type": "serviceBusTrigger", "direction": "in", "name": "m", "queueName": "%OFFPATH_OTHER_QUEUE%", "connection": "ServiceBus"}]}`
	got, err := writeApp(root, dir, map[string]string{"OFFPATH_BATCH_POLL_SCHEDULE": "*/1 * * * * *"}, map[string]string{"work": replaced})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "work", "function.json")); err != nil || string(b) != replaced {
		t.Errorf("work/function.json = %s (%v), want the replacement", b, err)
	}
	if _, err := writeApp(root, t.TempDir(), nil, map[string]string{"nope": replaced}); err == nil {
		t.Error("writeApp replaced a function that does not exist")
	}
	want := map[string]string{
		"OFFPATH_BATCH_POLL_SCHEDULE": "*/1 * * * * *",
		"OFFPATH_TICKETS_SCHEDULE":    NeverSchedule,
		"OFFPATH_OTHER_QUEUE":         "offpath-other-queue",
	}
	if !maps.Equal(got, want) {
		t.Errorf("writeApp settings = %v, want %v", got, want)
	}
	for _, f := range []string{"host.json", "models.json", "nightly-summaries/function.json", "batch-poll/function.json", "work/function.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("app folder: %v", err)
		}
	}
}

// TestNeverSchedule_IsFarOff: the default schedule parses and does not
// fire within a day of any moment except the new year's.
func TestNeverSchedule_IsFarOff(t *testing.T) {
	t.Parallel()
	s, err := ncrontab.Parse(NeverSchedule)
	if err != nil {
		t.Fatalf("Parse(%q): %v", NeverSchedule, err)
	}
	from := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	if next := s.Next(from); next.Sub(from) < 24*time.Hour {
		t.Errorf("Next(%v) = %v, want months away", from, next)
	}
}

// TestLastLines: a failed test shows the end of the app's output, however
// it ends.
func TestLastLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb"},
		{"", 3, ""},
	} {
		if got := lastLines(tc.text, tc.n); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.text, tc.n, got, tc.want)
		}
	}
}
