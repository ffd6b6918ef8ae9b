package config_test

import (
	"testing"

	"github.com/offpath/offpath/internal/config"
)

func TestLoadHandler_TokenMetrics(t *testing.T) {
	t.Parallel()
	const cs = "InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://westeurope-5.in.applicationinsights.azure.com/"
	with := func(kv ...string) map[string]string {
		return withPairs(map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "8080"}, kv...)
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, m *config.TokenMetrics)
	}{
		{name: "off", env: with(), check: func(t *testing.T, m *config.TokenMetrics) {
			if m != nil {
				t.Errorf("TokenMetrics = %+v, want nil", m)
			}
		}},
		{name: "application insights with entra", env: with("APPLICATIONINSIGHTS_CONNECTION_STRING", cs,
			"APPLICATIONINSIGHTS_AUTHENTICATION_STRING", "ClientId=abc;Authorization=AAD"), check: func(t *testing.T, m *config.TokenMetrics) {
			if m == nil || !m.AppInsights || !m.Entra || m.ClientID != "abc" || m.File != "" || m.ConnectionString != cs {
				t.Errorf("TokenMetrics = %+v", m)
			}
		}},
		{name: "file only", env: with("OFFPATH_TOKEN_METRICS_FILE", "/tmp/run/metrics.jsonl"), check: func(t *testing.T, m *config.TokenMetrics) {
			if m == nil || m.AppInsights || m.Entra || m.File != "/tmp/run/metrics.jsonl" {
				t.Errorf("TokenMetrics = %+v", m)
			}
		}},
		{name: "no key", env: with("APPLICATIONINSIGHTS_CONNECTION_STRING", "IngestionEndpoint=https://x/"), wantErr: "APPLICATIONINSIGHTS_CONNECTION_STRING"},
		{name: "bad authorization", env: with("APPLICATIONINSIGHTS_CONNECTION_STRING", cs, "APPLICATIONINSIGHTS_AUTHENTICATION_STRING", "Authorization=Key"),
			wantErr: "APPLICATIONINSIGHTS_AUTHENTICATION_STRING"},
		{name: "prometheus only", env: with("OFFPATH_METRICS_ADDR", ":9464"), check: func(t *testing.T, m *config.TokenMetrics) {
			if m == nil || m.AppInsights || m.File != "" || m.PrometheusAddr != ":9464" {
				t.Errorf("TokenMetrics = %+v", m)
			}
		}},
		{name: "bad prometheus address", env: with("OFFPATH_METRICS_ADDR", "9464"), wantErr: "OFFPATH_METRICS_ADDR"},
		{name: "relative file", env: with("OFFPATH_TOKEN_METRICS_FILE", "metrics.jsonl"), wantErr: "OFFPATH_TOKEN_METRICS_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if c, ok := loadCase(t, tt.env, tt.wantErr); ok {
				tt.check(t, c.TokenMetrics)
			}
		})
	}
}
