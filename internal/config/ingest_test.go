package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/config"
)

func TestLoadHandler_Ingest(t *testing.T) {
	t.Parallel()
	base := map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}
	with := func(kv ...string) map[string]string { return withPairs(base, kv...) }
	const host = `{"functionTimeout":"00:10:00","extensions":{"serviceBus":{"maxAutoLockRenewalDuration":"00:10:00"}}}`
	tests := []struct {
		name    string
		env     map[string]string
		host    string
		check   func(t *testing.T, in config.Ingest, a config.AOAI, st config.Storage)
		wantErr []string
	}{
		{"defaults, no model endpoint", with(), host, func(t *testing.T, in config.Ingest, a config.AOAI, st config.Storage) {
			if in.Alias != "ingest" || in.MaxDocumentBytes != 100<<20 || in.HeavyThreshold != 8<<20 || a.Endpoint != "" || in.Budget != 9*time.Minute ||
				in.MaxDeliveryCount != 10 || in.HeavyMaxDeliveryCount != 10 {
				t.Errorf("got %+v", in)
			}
		}, nil},
		{"a shorter lock renewal bounds the budget", with(), `{"functionTimeout":"00:10:00","extensions":{"serviceBus":{"maxAutoLockRenewalDuration":"00:02:00"}}}`,
			func(t *testing.T, in config.Ingest, a config.AOAI, st config.Storage) {
				if in.Budget != 108*time.Second {
					t.Errorf("budget %v, want 1m48s (2m less a tenth)", in.Budget)
				}
			}, nil},
		{"everything set", with("OFFPATH_INGEST_ALIAS", "kb", "OFFPATH_INGEST_MAX_BYTES", "1000", "OFFPATH_INGEST_HEAVY_BYTES", "500",
			"OFFPATH_INGEST_CHUNK_TOKENS", "256", "OFFPATH_INGEST_CHUNK_OVERLAP", "32",
			"OFFPATH_INGEST_MAX_DELIVERY_COUNT", "5", "OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT", "8",
			"OFFPATH_AOAI_ENDPOINT", "http://127.0.0.1:4141/", "OFFPATH_AOAI_API_KEY", "k", "OFFPATH_AOAI_MAX_ATTEMPTS", "3",
			"OFFPATH_AOAI_BASE_BACKOFF", "100ms", "OFFPATH_AOAI_INSTANCES", "4",
			"OFFPATH_AOAI_LIMITS", `{"gpt-4o-mini":{"tpm":400000,"rpm":2400},"emb":{"tpm":10}}`,
			"OFFPATH_AOAI_TPM_BUDGET", "4000", "OFFPATH_AOAI_RPM_BUDGET", "24",
			"OFFPATH_AOAI_LEASE_RENEW", "5s", "OFFPATH_AOAI_LEASE_TTL", "20s"), host,
			func(t *testing.T, in config.Ingest, a config.AOAI, st config.Storage) {
				if a.Quotas["gpt-4o-mini"] != (config.Limit{TPM: 400_000, RPM: 2400}) || !*a.SharedQuota || a.LeaseRenew != 5*time.Second || a.LeaseTTL != 20*time.Second {
					t.Errorf("shared quota: got %+v", a)
				}
				if in.Alias != "kb" || in.MaxDocumentBytes != 1000 || in.HeavyThreshold != 500 || in.ChunkTokens != 256 || in.ChunkOverlap != 32 || a.Endpoint == "" ||
					in.MaxDeliveryCount != 5 || in.HeavyMaxDeliveryCount != 8 ||
					a.Endpoint != "http://127.0.0.1:4141" || a.MaxAttempts != 3 || a.BaseBackoff != 100*time.Millisecond ||
					a.Limits["gpt-4o-mini"] != (config.Limit{TPM: 100_000, RPM: 600}) || a.Limits["emb"] != (config.Limit{TPM: 2}) ||
					a.ChatTPM != 4000 || a.ChatRPM != 24 {
					t.Errorf("got %+v / %+v", in, a)
				}
			}, nil},
		{"bad values", with("OFFPATH_INGEST_MAX_BYTES", "-1", "OFFPATH_INGEST_CHUNK_TOKENS", "9000",
			"OFFPATH_INGEST_MAX_DELIVERY_COUNT", "0", "OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT", "ten", "OFFPATH_AOAI_ENDPOINT", "http://127.0.0.1:1",
			"OFFPATH_AOAI_LIMITS", "tpm=5", "OFFPATH_AOAI_MAX_ATTEMPTS", "0", "OFFPATH_AOAI_TPM_BUDGET", "lots"), host, nil,
			[]string{"OFFPATH_INGEST_MAX_BYTES", "OFFPATH_INGEST_CHUNK_TOKENS", "OFFPATH_INGEST_MAX_DELIVERY_COUNT \"0\"", "OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT \"ten\"", "OFFPATH_AOAI_LIMITS", "OFFPATH_AOAI_MAX_ATTEMPTS", "OFFPATH_AOAI_TPM_BUDGET", "OFFPATH_AOAI_API_KEY is needed"}},
		{"the quota kept per instance", with("OFFPATH_AOAI_ENDPOINT", "http://127.0.0.1:4141", "OFFPATH_AOAI_API_KEY", "k", "OFFPATH_AOAI_SHARED_QUOTA", "false"), host,
			func(t *testing.T, in config.Ingest, a config.AOAI, st config.Storage) {
				if a.Endpoint == "" || *a.SharedQuota {
					t.Errorf("got %+v", a)
				}
			}, nil},
		{"bad lease settings", with("OFFPATH_AOAI_ENDPOINT", "http://127.0.0.1:4141", "OFFPATH_AOAI_API_KEY", "k", "OFFPATH_AOAI_SHARED_QUOTA", "sometimes",
			"OFFPATH_AOAI_LEASE_RENEW", "40s", "OFFPATH_AOAI_LEASE_TTL", "1ms"), host, nil,
			[]string{"OFFPATH_AOAI_SHARED_QUOTA", "OFFPATH_AOAI_LEASE_TTL \"1ms\"", "must be longer than OFFPATH_AOAI_LEASE_RENEW"}},
		{"identity without a blob endpoint", map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "AzureWebJobsStorage__tableServiceUri": "https://a.table.core.windows.net",
			"OFFPATH_AOAI_ENDPOINT": "https://r.openai.azure.com"}, host, nil, []string{"__blobServiceUri or __accountName is needed for the documents"}},
		{"identity with a blob endpoint", map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "AzureWebJobsStorage__tableServiceUri": "https://a.table.core.windows.net",
			"AzureWebJobsStorage__blobServiceUri": "https://a.blob.core.windows.net/", "OFFPATH_AOAI_ENDPOINT": "https://r.openai.azure.com"}, host,
			func(t *testing.T, in config.Ingest, a config.AOAI, st config.Storage) {
				if st.BlobServiceURL != "https://a.blob.core.windows.net" || a.Endpoint == "" || a.APIKey != "" {
					t.Errorf("got %+v / %+v", st, a)
				}
			}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := config.LoadHandler(env(tt.env), appFiles(t, tt.host))
			if tt.wantErr != nil {
				for _, w := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("LoadHandler() error = %v, want one containing %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadHandler() = %v", err)
			}
			tt.check(t, got.Ingest, got.AOAI, got.Storage)
		})
	}
}
