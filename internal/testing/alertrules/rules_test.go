package alertrules_test

import (
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/testing/alertrules"
)

// The repository's rules parse; the marker of one alert fires its rule.
func TestLoad_RepositoryRules(t *testing.T) {
	t.Parallel()
	rules, err := alertrules.Load("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) < 2 {
		t.Fatalf("%d rules", len(rules))
	}
	got := alertrules.Fired(rules, "error: offpath-alert name=second_door: a batch on the Azure OpenAI resource was not created by offpath")
	if len(got) != 1 || got[0] != "offpath-second-door" {
		t.Errorf("a second_door line fires %v, want [offpath-second-door]", got)
	}
}

func TestParse_BrokenQueriesFail(t *testing.T) {
	t.Parallel()
	const line = "error: offpath-alert name=batch_failed: part failed"
	for _, tt := range []struct {
		query string
		want  string
	}{
		{`AppTraces | where Message has "batch_failed"`, `operator "has"`},
		{`AppTraces | where SeverityLevel contains "3"`, `column "SeverityLevel"`},
		{`AppRequests | where Message contains "x"`, "want AppTraces"},
		{`AppTraces | project Message`, "no where"},
		{`AppTraces | where Message contains "x`, "unterminated"},
		{`AppTraces | summarize count()`, `operator "summarize"`},
	} {
		if _, err := alertrules.ParseQuery(tt.query); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("alertrules.ParseQuery(%s) = %v, want an error containing %q", tt.query, err, tt.want)
		}
	}
	for _, tt := range []struct {
		query string
		match bool
	}{
		// The old rules matched JSON fields the traces do not carry.
		{`AppTraces | where Message contains '"level":"error"' | where Message contains '"alert":"batch_failed"'`, false},
		{`AppTraces | where Message contains "OFFPATH-ALERT name=batch_failed:"`, true}, // contains ignores case
		{`AppTraces | where Message contains_cs "OFFPATH-ALERT name=batch_failed:"`, false},
		{`AppTraces | where Message contains "offpath-alert name=batch_fail:"`, false}, // the colon ends the name
		{`AppTraces | where Message contains "offpath-alert" and not(Message contains "name=batch_failed:")`, false},
		{`AppTraces | where Message contains "x" or (Message !contains "y" and Message matches regex "name=batch_[a-z]+:")`, true},
		{`AppTraces | where Message matches regex @"^error: offpath-alert name=\w+:"`, true},
	} {
		f, err := alertrules.ParseQuery(tt.query)
		if err != nil {
			t.Errorf("alertrules.ParseQuery(%s): %v", tt.query, err)
			continue
		}
		if got := f.Matches(line); got != tt.match {
			t.Errorf("%s on %q = %v, want %v", tt.query, line, got, tt.match)
		}
	}
	for _, tt := range []struct{ text, want string }{
		{"var alertEvents = [\n  {\n    name: 'x'\n    query: 'AppTraces | where ${f}'\n  }\n]\nname: 'offpath-${a.name}'\nquery: a.query\n", "interpolation"},
		{"var alertEvents = [\n]\nname: 'offpath-${a.name}'\nquery: a.query\nname: 'offpath-y'\nquery: 'AppTraces | where Message contains \"x\"'\n", ""},
		{"var alertEvents = [\n]\nname: 'offpath-x'\nquery: 'AppTraces | where Message contains \"x\"'\n", "must deploy each entry"},
	} {
		_, err := alertrules.Parse(tt.text)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("alertrules.Parse(%q) = %v, want %q", tt.text, err, tt.want)
		}
	}
}
