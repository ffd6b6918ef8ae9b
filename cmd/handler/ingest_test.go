package main

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/config"
)

// TestNewModels_SharesTheQuotasItKnows: the deployments whose whole quota
// is configured are shared with the fleet unless sharing is off; without a
// quota there is nothing to share.
func TestNewModels_SharesTheQuotasItKnows(t *testing.T) {
	t.Parallel()
	quotas := map[string]config.Limit{"gpt-4o-mini": {TPM: 400_000, RPM: 2400}}
	tests := []struct {
		name   string
		aoai   config.AOAI
		shared bool
	}{
		{"quotas shared", config.AOAI{Quotas: quotas, Limits: map[string]config.Limit{"gpt-4o-mini": {TPM: 10_000, RPM: 60}}, SharedQuota: new(true)}, true},
		{"sharing off", config.AOAI{Quotas: quotas, Limits: map[string]config.Limit{"gpt-4o-mini": {TPM: 10_000, RPM: 60}}, SharedQuota: new(false)}, false},
		{"only a per-instance budget", config.AOAI{ChatTPM: 4000, ChatRPM: 24, SharedQuota: new(true)}, false},
		{"no limits", config.AOAI{SharedQuota: new(true)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := tt.aoai
			a.Endpoint, a.APIKey = "http://127.0.0.1:1", "k"
			m, err := newModels(a, nil, "gpt-4o-mini", nil, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			if fleet := m.fleet; (fleet != nil) != tt.shared {
				t.Errorf("newModels(%+v) shares the quota: %v, want %v", tt.aoai, fleet != nil, tt.shared)
			}
		})
	}
}
