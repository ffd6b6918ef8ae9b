package config_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/config"
)

func TestLoadHandler_Nightly(t *testing.T) {
	t.Parallel()
	with := func(kv ...string) map[string]string {
		return withPairs(map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "8080", "OFFPATH_AOAI_ENDPOINT": "http://127.0.0.1:4000", "OFFPATH_AOAI_API_KEY": "k"}, kv...)
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, n *config.Nightly)
	}{
		{name: "defaults", env: with(), check: func(t *testing.T, n *config.Nightly) {
			if n == nil || n.Tenant != "support" || n.Alias != "summarize" || n.SystemPrompt != "Summarize the ticket in two sentences." ||
				n.MaxTokens != 160 || n.TicketsContainer != "tickets" || n.ReportsContainer != "reports" || n.TicketURL != "" || *n.AuditMinAge != time.Hour {
				t.Errorf("Nightly = %+v", n)
			}
		}},
		{name: "set", env: with("OFFPATH_TICKETS_TENANT", "helpdesk", "OFFPATH_TICKETS_SYSTEM_PROMPT", "One sentence.", "OFFPATH_TICKETS_MAX_TOKENS", "64",
			"OFFPATH_TICKETS_URL", "https://support.example.com/t/{id}", "OFFPATH_AUDIT_MIN_AGE", "30m", "OFFPATH_REPORTS_CONTAINER", "morning-reports"),
			check: func(t *testing.T, n *config.Nightly) {
				if n.Tenant != "helpdesk" || n.SystemPrompt != "One sentence." || n.MaxTokens != 64 || n.TicketURL != "https://support.example.com/t/{id}" ||
					*n.AuditMinAge != 30*time.Minute || n.ReportsContainer != "morning-reports" {
					t.Errorf("Nightly = %+v", n)
				}
			}},
		{name: "bad max tokens", env: with("OFFPATH_TICKETS_MAX_TOKENS", "0"), wantErr: "OFFPATH_TICKETS_MAX_TOKENS"},
		{name: "bad container", env: with("OFFPATH_TICKETS_CONTAINER", "Tickets_2026"), wantErr: "OFFPATH_TICKETS_CONTAINER"},
		{name: "URL without the id", env: with("OFFPATH_TICKETS_URL", "https://support.example.com/tickets"), wantErr: "OFFPATH_TICKETS_URL"},
		{name: "URL not http", env: with("OFFPATH_TICKETS_URL", "javascript:alert({id})"), wantErr: "OFFPATH_TICKETS_URL"},
		{name: "bad min age", env: with("OFFPATH_AUDIT_MIN_AGE", "soon"), wantErr: "OFFPATH_AUDIT_MIN_AGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if c, ok := loadCase(t, tt.env, tt.wantErr); ok {
				tt.check(t, c.Nightly)
			}
		})
	}
	if c, err := config.LoadHandler(withBase(map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "8080"}), appFiles(t, `{}`)); err != nil || c.Nightly != nil {
		t.Errorf("without a batch configuration: Nightly = %+v, %v; want nil", c.Nightly, err)
	}
}
