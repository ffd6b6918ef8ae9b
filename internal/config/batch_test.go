package config_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/config"
)

func TestLoadHandler_Batch(t *testing.T) {
	t.Parallel()
	base := map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "8080"}
	with := func(kv ...string) map[string]string { return withPairs(base, kv...) }
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c config.Handler)
	}{
		{name: "off without an endpoint", env: with(), check: func(t *testing.T, c config.Handler) {
			if b := c.Batch; b != nil {
				t.Errorf("Batch = %+v, want nil", b)
			}
		}},
		{name: "simulator with a key", env: with("OFFPATH_AOAI_ENDPOINT", "http://127.0.0.1:4000/", "OFFPATH_AOAI_API_KEY", "k",
			"OFFPATH_BATCH_QUOTA", "gpt-4o-mini-batch=5000000, other=10", "OFFPATH_BATCH_POLL_INTERVAL", "5s"),
			check: func(t *testing.T, c config.Handler) {
				b, a := c.Batch, c.AOAI
				if b == nil || a.Endpoint != "http://127.0.0.1:4000" || a.APIKey.Reveal() != "k" || a.Surface != "v1" || b.PollInterval != 5*time.Second ||
					b.Quota["gpt-4o-mini-batch"] != 5_000_000 || b.Quota["other"] != 10 || b.LeaseTTL <= b.PollInterval {
					t.Errorf("Batch = %+v, AOAI = %+v", b, a)
				}
			}},
		{name: "plain http off loopback", env: with("OFFPATH_AOAI_ENDPOINT", "http://res.openai.azure.com"), wantErr: "OFFPATH_AOAI_ENDPOINT"},
		{name: "endpoint with a path", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com/openai/v1"), wantErr: "OFFPATH_AOAI_ENDPOINT"},
		{name: "bad surface", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_AOAI_SURFACE", "v2"), wantErr: "OFFPATH_AOAI_SURFACE"},
		{name: "bad quota", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_BATCH_QUOTA", "dep=lots"), wantErr: "OFFPATH_BATCH_QUOTA"},
		{name: "cool-off after failures", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_BATCH_COOLOFF_FAILURES", "5"),
			check: func(t *testing.T, c config.Handler) {
				if c.Batch == nil || c.Batch.CoolOffFailures != 5 || c.Batch.CoolOff != config.DefaultBatchCoolOff {
					t.Errorf("Batch = %+v, want 5 failures and the default cool-off", c.Batch)
				}
			}},
		{name: "cool-off failures default", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com"),
			check: func(t *testing.T, c config.Handler) {
				if c.Batch == nil || c.Batch.CoolOffFailures != config.DefaultBatchCoolOffFailures {
					t.Errorf("Batch = %+v, want the default cool-off failures", c.Batch)
				}
			}},
		{name: "bad cool-off failures", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_BATCH_COOLOFF_FAILURES", "0"), wantErr: "OFFPATH_BATCH_COOLOFF_FAILURES"},
		{name: "bad interval", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_BATCH_POLL_INTERVAL", "-1s"), wantErr: "OFFPATH_BATCH_POLL_INTERVAL"},
		{name: "http webhook", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_ALERT_WEBHOOK_URL", "http://hooks.example/x"), wantErr: "OFFPATH_ALERT_WEBHOOK_URL"},
		{name: "packing off by default", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com"), check: func(t *testing.T, c config.Handler) {
			if b := c.Batch; b == nil || b.Pack.MaxItems != 0 || b.Pack.Window != 10*time.Minute || b.Pack.TargetLines != 10_000 || b.Pack.MaxTokens != 200_000 {
				t.Errorf("Batch = %+v, want packing off with the defaults", c.Batch)
			}
		}},
		{name: "packing on", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_BATCH_PACK_MAX_ITEMS", "50",
			"OFFPATH_BATCH_PACK_WINDOW", "15m", "OFFPATH_BATCH_PACK_TARGET_LINES", "5000", "OFFPATH_BATCH_PACK_MAX_TOKENS", "90000"),
			check: func(t *testing.T, c config.Handler) {
				if b := c.Batch; b == nil || b.Pack != (config.BatchPack{MaxItems: 50, MaxTokens: 90_000, Window: 15 * time.Minute, TargetLines: 5000}) {
					t.Errorf("Batch = %+v", c.Batch)
				}
			}},
		{name: "pack window too long", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_BATCH_PACK_MAX_ITEMS", "50",
			"OFFPATH_BATCH_PACK_WINDOW", "7h"), wantErr: "OFFPATH_BATCH_PACK_WINDOW"},
		{name: "pack target below two small jobs", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com", "OFFPATH_BATCH_PACK_MAX_ITEMS", "500",
			"OFFPATH_BATCH_PACK_TARGET_LINES", "900"), wantErr: "OFFPATH_BATCH_PACK_TARGET_LINES"},
		{name: "pack target above Azure's lines a file", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com",
			"OFFPATH_BATCH_PACK_TARGET_LINES", "100001"), wantErr: "OFFPATH_BATCH_PACK_TARGET_LINES"},
		{name: "managed identity needs the blob endpoint", env: with("OFFPATH_AOAI_ENDPOINT", "https://res.openai.azure.com",
			"OFFPATH_STORAGE__accountName", "offpathstore"), check: func(t *testing.T, c config.Handler) {
			if c.Batch == nil || c.Storage.BlobServiceURL != "https://offpathstore.blob.core.windows.net" {
				t.Errorf("Batch = %+v, Storage = %+v, want the account's blob endpoint", c.Batch, c.Storage)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if c, ok := loadCase(t, tt.env, tt.wantErr); ok {
				tt.check(t, c)
			}
		})
	}
}
