package config_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/config"
)

const accountID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.CognitiveServices/accounts/aoai"

func TestLoadHandler_Reconcile(t *testing.T) {
	t.Parallel()
	with := func(kv ...string) map[string]string {
		return withPairs(map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "8080"}, kv...)
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, r *config.Reconcile)
	}{
		{name: "off without a resource id", env: with(), check: func(t *testing.T, r *config.Reconcile) {
			if r != nil {
				t.Errorf("Reconcile = %+v, want nil", r)
			}
		}},
		{name: "defaults", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID), check: func(t *testing.T, r *config.Reconcile) {
			if r == nil || r.ResourceID != accountID || r.Tolerance != 0.01 || r.MinTokens != 100 || r.Settle != 20*time.Minute || r.MonitorEndpoint != "" {
				t.Errorf("Reconcile = %+v", r)
			}
		}},
		{name: "set", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_TOLERANCE", "0.05", "OFFPATH_RECONCILE_MIN_TOKENS", "1000",
			"OFFPATH_RECONCILE_SETTLE", "45m", "OFFPATH_MONITOR_ENDPOINT", "https://management.usgovcloudapi.net/"),
			check: func(t *testing.T, r *config.Reconcile) {
				if r.Tolerance != 0.05 || r.MinTokens != 1000 || r.Settle != 45*time.Minute || r.MonitorEndpoint != "https://management.usgovcloudapi.net" {
					t.Errorf("Reconcile = %+v", r)
				}
			}},
		{name: "not an account", env: with("OFFPATH_AOAI_RESOURCE_ID", "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/s"), wantErr: "OFFPATH_AOAI_RESOURCE_ID"},
		{name: "bad tolerance", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_TOLERANCE", "5"), wantErr: "OFFPATH_RECONCILE_TOLERANCE"},
		{name: "bad min tokens", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_MIN_TOKENS", "-1"), wantErr: "OFFPATH_RECONCILE_MIN_TOKENS"},
		{name: "bad settle", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_SETTLE", "forever"), wantErr: "OFFPATH_RECONCILE_SETTLE"},
		{name: "plain http endpoint", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_MONITOR_ENDPOINT", "http://127.0.0.1:4141"), wantErr: "OFFPATH_MONITOR_ENDPOINT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if c, ok := loadCase(t, tt.env, tt.wantErr); ok {
				tt.check(t, c.Reconcile)
			}
		})
	}
}
