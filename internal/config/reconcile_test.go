package config_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/reconcile"
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
		check   func(t *testing.T, r *config.Reconcile, a config.AOAI)
	}{
		{name: "off without a resource id", env: with(), check: func(t *testing.T, r *config.Reconcile, a config.AOAI) {
			if r != nil {
				t.Errorf("Reconcile = %+v, want nil", r)
			}
		}},
		{name: "defaults", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID), check: func(t *testing.T, r *config.Reconcile, a config.AOAI) {
			if r == nil || a.ResourceID != accountID || r.Tolerance != 0.01 || r.MinTokens != 100 || r.Settle != 20*time.Minute || r.MonitorEndpoint != "" ||
				r.Period != time.Hour || r.GlobalBatch != reconcile.BatchByDay {
				t.Errorf("Reconcile = %+v", r)
			}
		}},
		{name: "set", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_TOLERANCE", "0.05", "OFFPATH_RECONCILE_MIN_TOKENS", "1000",
			"OFFPATH_RECONCILE_SETTLE", "45m", "OFFPATH_MONITOR_ENDPOINT", "https://management.usgovcloudapi.net/",
			"OFFPATH_RECONCILE_PERIOD", "5m", "OFFPATH_RECONCILE_GLOBAL_BATCH", "skip"),
			check: func(t *testing.T, r *config.Reconcile, a config.AOAI) {
				if r.Tolerance != 0.05 || r.MinTokens != 1000 || r.Settle != 45*time.Minute || r.MonitorEndpoint != "https://management.usgovcloudapi.net" ||
					r.Period != 5*time.Minute || r.GlobalBatch != reconcile.BatchSkip {
					t.Errorf("Reconcile = %+v", r)
				}
			}},
		{name: "not an account", env: with("OFFPATH_AOAI_RESOURCE_ID", "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/s"), wantErr: "OFFPATH_AOAI_RESOURCE_ID"},
		{name: "bad tolerance", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_TOLERANCE", "5"), wantErr: "OFFPATH_RECONCILE_TOLERANCE"},
		{name: "bad min tokens", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_MIN_TOKENS", "-1"), wantErr: "OFFPATH_RECONCILE_MIN_TOKENS"},
		{name: "bad settle", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_SETTLE", "forever"), wantErr: "OFFPATH_RECONCILE_SETTLE"},
		{name: "period of a minute", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_PERIOD", "1m"), check: func(t *testing.T, r *config.Reconcile, a config.AOAI) {
			if r.Period != time.Minute {
				t.Errorf("Period = %v, want 1m", r.Period)
			}
		}},
		{name: "period not a grain", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_PERIOD", "2m"), wantErr: "OFFPATH_RECONCILE_PERIOD \"2m\": must be one of 1m, 5m, 15m, 30m, 1h"},
		{name: "period of a day", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_PERIOD", "24h"), wantErr: "OFFPATH_RECONCILE_PERIOD"},
		{name: "period not a duration", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_PERIOD", "hourly"), wantErr: "OFFPATH_RECONCILE_PERIOD"},
		{name: "global batch mode unknown", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_RECONCILE_GLOBAL_BATCH", "hour"), wantErr: "OFFPATH_RECONCILE_GLOBAL_BATCH \"hour\""},
		{name: "plain http endpoint", env: with("OFFPATH_AOAI_RESOURCE_ID", accountID, "OFFPATH_MONITOR_ENDPOINT", "http://127.0.0.1:4141"), wantErr: "OFFPATH_MONITOR_ENDPOINT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if c, ok := loadCase(t, tt.env, tt.wantErr); ok {
				tt.check(t, c.Reconcile, c.AOAI)
			}
		})
	}
}
