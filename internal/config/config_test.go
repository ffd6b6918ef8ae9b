package config_test

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/config"
)

// withBase adds the settings every handler needs (storage) to m.
func withBase(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		if k == "AzureWebJobsStorage" {
			return "UseDevelopmentStorage=true"
		}
		return ""
	}
}

// withPairs is base with the settings of kv (name, value, …) added.
func withPairs(base map[string]string, kv ...string) map[string]string {
	m := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// loadCase loads the handler's configuration from env (and a host.json
// with a 10-minute functionTimeout). With wantErr, it checks that the load
// fails naming it and returns false; otherwise that it succeeds.
func loadCase(t *testing.T, env map[string]string, wantErr string) (config.Handler, bool) {
	t.Helper()
	c, err := config.LoadHandler(withBase(env), appFiles(t, `{"functionTimeout":"00:10:00"}`))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("LoadHandler error = %v, want one naming %s", err, wantErr)
		}
		return c, false
	}
	if err != nil {
		t.Fatalf("LoadHandler: %v", err)
	}
	return c, true
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// appFiles serves host.json (body; "" for missing) and the repository's
// models.json.
func appFiles(t *testing.T, host string) func(string) ([]byte, error) {
	models, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	return func(path string) ([]byte, error) {
		switch filepath.Base(path) {
		case "host.json":
			if host == "" {
				return nil, fs.ErrNotExist
			}
			return []byte(host), nil
		case "models.json":
			return models, nil
		}
		return nil, fs.ErrNotExist
	}
}

// core is the part of Handler the timing and port tests compare.
type core struct {
	Port                               int
	AppRoot                            string
	FunctionTimeout, InvocationTimeout time.Duration
	LogLevel                           zerolog.Level
}

func coreOf(h config.Handler) core {
	return core{h.Port, h.AppRoot, h.FunctionTimeout, h.InvocationTimeout, *h.LogLevel}
}

func TestLoadHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		host    string
		want    core
		wantErr string
	}{
		{
			name: "defaults from host.json",
			env:  map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "40123", "FUNCTIONS_APP_ROOT_PATH": "/home/site/wwwroot"},
			host: `{"functionTimeout": "00:10:00"}`,
			want: core{Port: 40123, AppRoot: "/home/site/wwwroot", FunctionTimeout: 10 * time.Minute, InvocationTimeout: 9 * time.Minute, LogLevel: zerolog.InfoLevel},
		},
		{
			name: "legacy port variable, short timeout keeps 5 s margin",
			env:  map[string]string{"FUNCTIONS_HTTPWORKER_PORT": "9000"},
			host: `{"functionTimeout": "00:00:30"}`,
			want: core{Port: 9000, AppRoot: ".", FunctionTimeout: 30 * time.Second, InvocationTimeout: 25 * time.Second, LogLevel: zerolog.InfoLevel},
		},
		{
			name: "unbounded",
			env:  map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_LOG_LEVEL": "DEBUG"},
			host: `{"functionTimeout": "-1"}`,
			want: core{Port: 1, AppRoot: ".", InvocationTimeout: 30 * time.Minute, LogLevel: zerolog.DebugLevel},
		},
		{name: "no port", env: map[string]string{}, host: `{}`, wantErr: "FUNCTIONS_CUSTOMHANDLER_PORT is not set"},
		{name: "bad port", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "http"}, host: `{}`, wantErr: `"http" is not a port number`},
		{name: "no host.json", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1"}, wantErr: "read host.json"},
		{name: "bad timeout", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1"}, host: `{"functionTimeout": "10m"}`, wantErr: "functionTimeout"},
		{name: "override above timeout", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_INVOCATION_TIMEOUT": "20m"}, host: `{"functionTimeout": "00:10:00"}`, wantErr: "below functionTimeout"},
		{name: "bad request read timeout", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_REQUEST_READ_TIMEOUT": "0s"}, host: `{}`, wantErr: "OFFPATH_REQUEST_READ_TIMEOUT"},
		{name: "bad level", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_LOG_LEVEL": "loud"}, host: `{}`, wantErr: "OFFPATH_LOG_LEVEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := config.LoadHandler(withBase(tt.env), appFiles(t, tt.host))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadHandler() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadHandler() error = %v", err)
			}
			if coreOf(got) != tt.want {
				t.Errorf("LoadHandler() = %+v, want %+v", coreOf(got), tt.want)
			}
		})
	}
}

func TestLoadHandler_Tenancy(t *testing.T) {
	t.Parallel()
	const digest = "3f1e7a5d1b5b1e6c9a0f7c2e8d4b6a1c3e5f7a9b1d3f5e7a9c1b3d5f7e9a1c3b"
	base := map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1"}
	with := func(kv ...string) map[string]string { return withPairs(base, kv...) }
	tests := []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, h config.Handler)
		wantErr []string
	}{
		{
			name: "connection string and shipped catalog",
			env:  with("AzureWebJobsStorage", "UseDevelopmentStorage=true", "OFFPATH_ADMIN_KEY_SHA256", digest),
			check: func(t *testing.T, h config.Handler) {
				if h.Storage.Setting != "AzureWebJobsStorage" || h.Storage.ConnectionString == "" || h.Catalog == nil || len(h.Catalog.Names()) != 4 ||
					h.AdminKeys != 1 || h.Entra != nil || h.AuthCacheTTL != 30*time.Second || !strings.HasSuffix(h.ModelsSource, "models.json") ||
					h.AuthRevocationBound != 5*time.Second || h.AuthFailuresPerMinute != 20 {
					t.Errorf("got %+v", h)
				}
			},
		},
		{
			name: "identity-based, own storage setting, catalog from a setting, Entra",
			env: with("AzureWebJobsStorage", "UseDevelopmentStorage=true",
				"OFFPATH_STORAGE__accountName", "offpathdata", "OFFPATH_STORAGE__clientId", "11111111-2222-3333-4444-555555555555",
				"OFFPATH_MODELS", `{"version":1,"aliases":{"only":{"queue":{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":2}}}}}`,
				"OFFPATH_ENTRA_ISSUERS", "https://login.microsoftonline.com/t/v2.0, https://sts.windows.net/t/",
				"OFFPATH_ENTRA_AUDIENCES", "api://offpath", "OFFPATH_ENTRA_JWKS_URL", "https://login.microsoftonline.com/t/discovery/v2.0/keys",
				"OFFPATH_AUTH_CACHE_TTL", "5s"),
			check: func(t *testing.T, h config.Handler) {
				if h.Storage.Setting != "OFFPATH_STORAGE" || h.Storage.TableServiceURL != "https://offpathdata.table.core.windows.net" ||
					h.Storage.ConnectionString != "" || h.Storage.ClientID == "" || h.ModelsSource != "OFFPATH_MODELS" ||
					strings.Join(h.Catalog.Names(), ",") != "only" || h.Entra == nil || len(h.Entra.Issuers) != 2 || h.AuthCacheTTL != 5*time.Second ||
					!*h.Entra.AppOnly || len(h.Entra.Roles) != 0 {
					t.Errorf("got %+v / %+v", h.Storage, h.Entra)
				}
			},
		},
		{
			name: "auth settings",
			env: with("AzureWebJobsStorage", "x=y", "OFFPATH_AUTH_REVOCATION_BOUND", "2s", "OFFPATH_AUTH_FAILURES_PER_MINUTE", "100",
				"OFFPATH_ENTRA_ISSUERS", "https://login.microsoftonline.com/t/v2.0", "OFFPATH_ENTRA_AUDIENCES", "api://offpath",
				"OFFPATH_ENTRA_JWKS_URL", "https://login.microsoftonline.com/t/discovery/v2.0/keys",
				"OFFPATH_ENTRA_APP_ONLY", "false", "OFFPATH_ENTRA_ROLES", "Offpath.Tenant, Offpath.Batch"),
			check: func(t *testing.T, h config.Handler) {
				if h.AuthRevocationBound != 2*time.Second || h.AuthFailuresPerMinute != 100 || *h.Entra.AppOnly ||
					strings.Join(h.Entra.Roles, ",") != "Offpath.Tenant,Offpath.Batch" {
					t.Errorf("got %v %v %+v", h.AuthRevocationBound, h.AuthFailuresPerMinute, h.Entra)
				}
			},
		},
		{
			name: "table service URI",
			env:  map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "AzureWebJobsStorage__tableServiceUri": "https://acct.table.core.windows.net/"},
			check: func(t *testing.T, h config.Handler) {
				if h.Storage.TableServiceURL != "https://acct.table.core.windows.net" {
					t.Errorf("got %+v", h.Storage)
				}
			},
		},
		{name: "no storage", env: with(), wantErr: []string{"AzureWebJobsStorage is not set"}},
		{name: "plain http storage", env: with("AzureWebJobsStorage__tableServiceUri", "http://acct.table.core.windows.net"), wantErr: []string{"AzureWebJobsStorage__tableServiceUri"}},
		{name: "bad account", env: with("OFFPATH_STORAGE__accountName", "Bad_Account"), wantErr: []string{"OFFPATH_STORAGE__accountName"}},
		{
			name:    "bad catalog names the field",
			env:     with("AzureWebJobsStorage", "x=y", "OFFPATH_MODELS", `{"version":1,"aliases":{"summarize":{"batch":[{"deployment":"b1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":-2}}]}}}`),
			wantErr: []string{"OFFPATH_MODELS", "aliases.summarize.batch[0].price.output_per_1m: must be ≥ 0"},
		},
		{name: "plain admin key refused", env: with("AzureWebJobsStorage", "x=y", "OFFPATH_ADMIN_KEY_SHA256", "opa_abc"), wantErr: []string{"OFFPATH_ADMIN_KEY_SHA256", "not its SHA-256 digest"}},
		{name: "half an Entra configuration", env: with("AzureWebJobsStorage", "x=y", "OFFPATH_ENTRA_AUDIENCES", "api://offpath"), wantErr: []string{"OFFPATH_ENTRA_ISSUERS is not set", "OFFPATH_ENTRA_JWKS_URL"}},
		{name: "bad cache TTL", env: with("AzureWebJobsStorage", "x=y", "OFFPATH_AUTH_CACHE_TTL", "1h"), wantErr: []string{"OFFPATH_AUTH_CACHE_TTL"}},
		{
			name: "a short TTL shortens the default bound",
			env:  with("AzureWebJobsStorage", "x=y", "OFFPATH_AUTH_CACHE_TTL", "2s"),
			check: func(t *testing.T, h config.Handler) {
				if h.AuthCacheTTL != 2*time.Second || h.AuthRevocationBound != 2*time.Second {
					t.Errorf("got TTL %v, bound %v", h.AuthCacheTTL, h.AuthRevocationBound)
				}
			},
		},
		{name: "revocation bound below a second", env: with("AzureWebJobsStorage", "x=y", "OFFPATH_AUTH_REVOCATION_BOUND", "10ms"), wantErr: []string{"OFFPATH_AUTH_REVOCATION_BOUND"}},
		{name: "revocation bound above the TTL", env: with("AzureWebJobsStorage", "x=y", "OFFPATH_AUTH_CACHE_TTL", "3s", "OFFPATH_AUTH_REVOCATION_BOUND", "4s"), wantErr: []string{"must not exceed OFFPATH_AUTH_CACHE_TTL"}},
		{name: "failures per minute zero", env: with("AzureWebJobsStorage", "x=y", "OFFPATH_AUTH_FAILURES_PER_MINUTE", "0"), wantErr: []string{"OFFPATH_AUTH_FAILURES_PER_MINUTE"}},
		{name: "app only not a boolean", env: with("AzureWebJobsStorage", "x=y", "OFFPATH_ENTRA_ISSUERS", "https://i/v2.0", "OFFPATH_ENTRA_AUDIENCES", "api://offpath",
			"OFFPATH_ENTRA_JWKS_URL", "https://login.microsoftonline.com/t/discovery/v2.0/keys", "OFFPATH_ENTRA_APP_ONLY", "maybe"), wantErr: []string{"OFFPATH_ENTRA_APP_ONLY"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := config.LoadHandler(env(tt.env), appFiles(t, `{}`))
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
			tt.check(t, got)
		})
	}
}

func TestLoadHandler_MissingCatalog(t *testing.T) {
	t.Parallel()
	files := func(path string) ([]byte, error) {
		if filepath.Base(path) == "host.json" {
			return []byte(`{}`), nil
		}
		return nil, fs.ErrNotExist
	}
	_, err := config.LoadHandler(env(map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "AzureWebJobsStorage": "x=y"}), files)
	if err == nil || !strings.Contains(err.Error(), "models.json") {
		t.Errorf("LoadHandler() = %v, want an error naming models.json", err)
	}
}

func TestParseTimeSpan(t *testing.T) {
	t.Parallel()
	good := map[string]time.Duration{"00:05:00": 5 * time.Minute, "1.02:00:00": 26 * time.Hour, "00:00:00.5": 500 * time.Millisecond, "-1": 0, "": 0, "1:2": 62 * time.Minute}
	for in, want := range good {
		if got, err := config.ParseTimeSpan(in); err != nil || got != want {
			t.Errorf("ParseTimeSpan(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"5m", "00:61:00", "aa:00:00", "00:00:00", "30"} {
		if _, err := config.ParseTimeSpan(in); err == nil {
			t.Errorf("ParseTimeSpan(%q): no error", in)
		}
	}
	// The host reads "25:00:00" as 25 days: refused, with what to write.
	if _, err := config.ParseTimeSpan("25:00:00"); err == nil || !strings.Contains(err.Error(), "25 days") || !strings.Contains(err.Error(), "1.01:00:00") {
		t.Errorf("ParseTimeSpan(25:00:00) = %v, want a refusal naming 25 days and 1.01:00:00", err)
	}
}

func TestLoadHandler_RequestReadTimeout(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]time.Duration{"": config.DefaultRequestReadTimeout, "250ms": 250 * time.Millisecond} {
		got, err := config.LoadHandler(withBase(map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_REQUEST_READ_TIMEOUT": env}), appFiles(t, `{}`))
		if err != nil || got.RequestReadTimeout != want {
			t.Errorf("OFFPATH_REQUEST_READ_TIMEOUT=%q: %v, %v; want %v", env, got.RequestReadTimeout, err, want)
		}
	}
}
