package config_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/config"
)

// TestPrint_RedactsEverySecret: whatever form a secret takes (an account
// key, a SAS in a connection string or in a service URL, an API key, a
// webhook's token, Application Insights' connection string), the printed
// configuration shows that it is set and never what it is; formatted with
// %v, %+v or %#v (a log line's way), the secret settings show nothing
// either.
func TestPrint_RedactsEverySecret(t *testing.T) {
	t.Parallel()
	const (
		accountKey = "QUNDT1VOVEtFWQ0123456789ACCOUNTKEY=="
		sasSig     = "SASSIGNATUREvalue0123%3D"
		apiKey     = "aoai-api-key-0123456789"
		hookToken  = "webhook-token-0123456789"
		ikey       = "99999999-8888-7777-6666-555555555555"
	)
	secrets := []string{accountKey, sasSig, apiKey, hookToken, ikey}
	common := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": "1",
		"OFFPATH_AOAI_ENDPOINT":        "https://res.openai.azure.com", "OFFPATH_AOAI_API_KEY": apiKey,
		"OFFPATH_ALERT_WEBHOOK_URL":             "https://hooks.example/alerts?token=" + hookToken,
		"APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=" + ikey + ";IngestionEndpoint=https://westeurope-5.in.applicationinsights.azure.com/",
	}
	for name, storage := range map[string][]string{
		"account key":              {"AzureWebJobsStorage", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + accountKey + ";EndpointSuffix=core.windows.net"},
		"SAS connection string":    {"AzureWebJobsStorage", "BlobEndpoint=https://acct.blob.core.windows.net/;TableEndpoint=https://acct.table.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=bt&sig=" + sasSig},
		"SAS in the blob endpoint": {"OFFPATH_STORAGE__tableServiceUri", "https://acct.table.core.windows.net", "OFFPATH_STORAGE__blobServiceUri", "https://acct.blob.core.windows.net/?sv=2022-11-02&sig=" + sasSig},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := loadCase(t, withPairs(common, storage...), "")
			var b strings.Builder
			if err := c.Print(&b); err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets {
				if strings.Contains(b.String(), s) {
					t.Errorf("the printed configuration shows the secret %q:\n%s", s, b.String())
				}
			}
			for _, verb := range []string{"%v", "%+v", "%#v"} {
				for _, s := range []string{accountKey, apiKey, hookToken, ikey} {
					if out := fmt.Sprintf(verb, c) + fmt.Sprintf(verb, *c.TokenMetrics); strings.Contains(out, s) {
						t.Errorf("%s of the configuration shows the secret %q", verb, s)
					}
				}
			}
			var printed map[string]any
			if err := json.Unmarshal([]byte(b.String()), &printed); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, b.String())
			}
			if got := strings.Count(b.String(), config.Redacted); got < 4 {
				t.Errorf("%d values redacted, want the storage connection or SAS, the API key, the webhook and the connection string:\n%s", got, b.String())
			}
		})
	}
}

// TestPrint_ShowsTheEffectiveValues: what is printed is what the handler
// runs with, every default applied, the ones that follow from other
// settings included.
func TestPrint_ShowsTheEffectiveValues(t *testing.T) {
	t.Parallel()
	c, _ := loadCase(t, map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_AOAI_ENDPOINT": "https://res.openai.azure.com",
		"OFFPATH_BATCH_POLL_INTERVAL": "5s", "OFFPATH_AOAI_LIMITS": `{"gpt-4o-mini":{"tpm":400000,"rpm":2400}}`, "OFFPATH_AOAI_INSTANCES": "4"}, "")
	var b strings.Builder
	if err := c.Print(&b); err != nil {
		t.Fatal(err)
	}
	var p struct {
		InvocationTimeout string `json:"invocation_timeout"`
		LogLevel          string `json:"log_level"`
		AOAI              struct {
			Surface     string
			MaxAttempts int    `json:"max_attempts"`
			BaseBackoff string `json:"base_backoff"`
			SharedQuota bool   `json:"shared_quota"`
			LeaseTTL    string `json:"lease_ttl"`
			Limits      map[string]config.Limit
		}
		Batch struct {
			PollInterval string `json:"poll_interval"`
			LeaseTTL     string `json:"lease_ttl"`
			Concurrency  int
		}
		Nightly struct {
			Tenant      string
			AuditMinAge string `json:"audit_min_age"`
		}
		Ingest struct {
			Alias       string
			ChunkTokens int    `json:"chunk_tokens"`
			Budget      string `json:"budget"`
		}
	}
	if err := json.Unmarshal([]byte(b.String()), &p); err != nil {
		t.Fatal(err)
	}
	// The host.json of loadCase has a 10-minute functionTimeout; the
	// Service Bus lock renewal is the extension's 5 minutes.
	checks := []struct {
		what      string
		got, want any
	}{
		{"invocation timeout", p.InvocationTimeout, (9 * time.Minute).String()},
		{"log level", p.LogLevel, "info"},
		{"surface", p.AOAI.Surface, "v1"},
		{"max attempts", p.AOAI.MaxAttempts, 6},
		{"base backoff", p.AOAI.BaseBackoff, "500ms"},
		{"shared quota", p.AOAI.SharedQuota, true},
		{"quota lease TTL", p.AOAI.LeaseTTL, "30s"},
		{"per-instance share", p.AOAI.Limits["gpt-4o-mini"], config.Limit{TPM: 100_000, RPM: 600}},
		{"poll interval (set)", p.Batch.PollInterval, "5s"},
		{"batch lease (the invocation timeout and a minute)", p.Batch.LeaseTTL, (10 * time.Minute).String()},
		{"poll concurrency", p.Batch.Concurrency, 16},
		{"tickets tenant", p.Nightly.Tenant, "support"},
		{"audit min age", p.Nightly.AuditMinAge, "1h0m0s"},
		{"ingest alias", p.Ingest.Alias, "ingest"},
		{"chunk tokens", p.Ingest.ChunkTokens, 512},
		{"queue budget (the lock renewal less 30 s)", p.Ingest.Budget, "4m30s"},
	}
	for _, c := range checks {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s printed %v, want %v", c.what, c.got, c.want)
		}
	}
	// And they are the loaded configuration's own.
	if p.Batch.LeaseTTL != c.Batch.LeaseTTL.String() || p.Ingest.Budget != c.Ingest.Budget.String() || p.AOAI.MaxAttempts != c.AOAI.MaxAttempts {
		t.Errorf("printed %+v, loaded %+v / %+v", p, c.Batch, c.Ingest)
	}
}

// TestWithDefaults_Idempotent: the defaults are applied once; applying
// them again changes nothing, and nothing set is overwritten.
func TestWithDefaults_Idempotent(t *testing.T) {
	t.Parallel()
	c, _ := loadCase(t, map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_AOAI_ENDPOINT": "https://res.openai.azure.com",
		"OFFPATH_AOAI_SHARED_QUOTA": "false", "OFFPATH_AUDIT_MIN_AGE": "0s", "OFFPATH_LOG_LEVEL": "debug", "OFFPATH_INGEST_ALIAS": "kb"}, "")
	var once, twice strings.Builder
	if err := c.Print(&once); err != nil {
		t.Fatal(err)
	}
	if err := c.WithDefaults().Print(&twice); err != nil {
		t.Fatal(err)
	}
	if once.String() != twice.String() {
		t.Errorf("defaults applied twice differ:\n%s\n%s", once.String(), twice.String())
	}
	if *c.AOAI.SharedQuota || *c.Nightly.AuditMinAge != 0 || c.LogLevel.String() != "debug" || c.Ingest.Alias != "kb" {
		t.Errorf("a setting's own zero value was replaced by its default: shared %v, audit min age %v, level %v, alias %q",
			*c.AOAI.SharedQuota, *c.Nightly.AuditMinAge, c.LogLevel, c.Ingest.Alias)
	}
}
