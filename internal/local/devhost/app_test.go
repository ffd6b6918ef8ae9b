package devhost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeApp(t *testing.T, host string, fns map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(host), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range fns {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "function.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const goodHost = `{"version":"2.0","functionTimeout":"00:05:00","customHandler":{"description":{"defaultExecutablePath":"handler"},"enableForwardingHttpRequest":true},
	"extensions":{"serviceBus":{"maxConcurrentCalls":3,"maxAutoLockRenewalDuration":"00:07:00"},"http":{"routePrefix":""}}}`

func TestLoadApp(t *testing.T) {
	t.Parallel()
	timer := `{"bindings":[{"type":"timerTrigger","direction":"in","name":"t","schedule":"0 */5 * * * *"}]}`
	tests := []struct {
		name    string
		host    string
		fns     map[string]string
		env     map[string]string
		wantErr string
		check   func(*testing.T, *App)
	}{
		{name: "reads host.json", host: goodHost, fns: map[string]string{"tick": timer}, check: func(t *testing.T, a *App) {
			h := a.Host
			if h.Executable != "handler" || !h.Forwarding || h.FunctionTimeout != 5*time.Minute || h.MaxConcurrentCalls != 3 ||
				h.MaxAutoLockRenewal != 7*time.Minute || h.RoutePrefix != "" || h.PoisonBlobThreshold != 5 || len(a.Functions) != 1 {
				t.Errorf("app = %+v", a)
			}
		}},
		{name: "only listed functions run", host: goodHost, fns: map[string]string{"tick": timer, "tock": timer},
			env: map[string]string{"AzureFunctionsJobHost__functions__0": "tock"}, check: func(t *testing.T, a *App) {
				if len(a.Functions) != 1 || a.Functions[0].Name != "tock" {
					t.Errorf("functions = %v, want only tock", a.Functions)
				}
			}},
		{name: "disabled setting", host: goodHost, fns: map[string]string{"tick": timer, "tock": timer},
			env: map[string]string{"AzureWebJobs.tick.Disabled": "true"}, check: func(t *testing.T, a *App) {
				if len(a.Functions) != 1 || a.Functions[0].Name != "tock" {
					t.Errorf("functions = %v, want only tock", a.Functions)
				}
			}},
		{name: "no custom handler", host: `{"version":"2.0"}`, fns: map[string]string{"tick": timer}, wantErr: "defaultExecutablePath is required"},
		{name: "bad timeout", host: `{"functionTimeout":"5m","customHandler":{"description":{"defaultExecutablePath":"h"}}}`, fns: map[string]string{"tick": timer}, wantErr: "functionTimeout"},
		{name: "unsupported binding", host: goodHost, fns: map[string]string{"cosmos": `{"bindings":[{"type":"cosmosDBTrigger","direction":"in","name":"docs"}]}`}, wantErr: `type "cosmosDBTrigger" with direction "in" is not served`},
		{name: "two triggers", host: goodHost, fns: map[string]string{"x": `{"bindings":[{"type":"timerTrigger","direction":"in","name":"a"},{"type":"httpTrigger","direction":"in","name":"b"}]}`}, wantErr: "2 trigger bindings"},
		{name: "bad folder name", host: goodHost, fns: map[string]string{"1bad": timer}, wantErr: "not a valid function name"},
		{name: "malformed function.json", host: goodHost, fns: map[string]string{"x": `{"bindings":`}, wantErr: "function.json"},
		{name: "no functions", host: goodHost, fns: nil, wantErr: "no function folders"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeApp(t, tt.host, tt.fns)
			app, err := LoadApp(dir, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadApp() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadApp() = %v", err)
			}
			tt.check(t, app)
		})
	}
}

// TestRepositoryApp loads the repository's own host.json and function
// folders, so that a function.json the dev host cannot serve fails here.
func TestRepositoryApp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host, err := os.ReadFile("../../../host.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "host.json"), host, 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("../../../functions")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("../../../functions", e.Name(), "function.json"))
		if err != nil {
			t.Fatal(err)
		}
		_ = os.MkdirAll(filepath.Join(dir, e.Name()), 0o755)
		if err := os.WriteFile(filepath.Join(dir, e.Name(), "function.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app, err := LoadApp(dir, func(string) string { return "" })
	if err != nil {
		t.Fatalf("the repository's app does not load: %v", err)
	}
	for _, fn := range app.Functions {
		for _, b := range fn.Outputs() {
			if b.DataType == "binary" && b.Type != "http" {
				t.Errorf("function %s output %q has dataType binary: offpath sends output bytes as base64, which that binding would write as text", fn.Name, b.Name)
			}
		}
	}
	if api := app.Functions[0]; api.Name != "api" || !api.forwarded(app.Host) {
		t.Errorf("the api function must run in forwarding mode: %+v", api)
	}
}
