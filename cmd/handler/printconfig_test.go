package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrintConfiguration: handler -print-config prints, outside the host
// (no port), the configuration the handler would run with, the storage
// key redacted; a setting the handler would refuse is printed and named.
func TestPrintConfiguration(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "host.json"), []byte(`{"functionTimeout":"00:05:00"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	copyModels(t, root)
	const key = "c2VjcmV0LWFjY291bnQta2V5LWZvci10aGUtdGVzdA=="
	env := map[string]string{"FUNCTIONS_APP_ROOT_PATH": root,
		"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net"}
	var out strings.Builder
	if err := printConfiguration(func(k string) string { return env[k] }, os.ReadFile, &out); err != nil {
		t.Fatalf("printConfiguration: %v", err)
	}
	var p struct {
		InvocationTimeout string `json:"invocation_timeout"`
		Storage           struct {
			Setting          string `json:"setting"`
			ConnectionString string `json:"connection_string"`
		} `json:"storage"`
	}
	if err := json.Unmarshal([]byte(out.String()), &p); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), key) || p.Storage.ConnectionString != "<redacted>" || p.Storage.Setting != "AzureWebJobsStorage" ||
		p.InvocationTimeout != "4m30s" {
		t.Errorf("printed:\n%s", out.String())
	}

	env["OFFPATH_BATCH_POLL_INTERVAL"], env["OFFPATH_AOAI_ENDPOINT"] = "soon", "https://res.openai.azure.com"
	out.Reset()
	if err := printConfiguration(func(k string) string { return env[k] }, os.ReadFile, &out); err == nil ||
		!strings.Contains(err.Error(), `OFFPATH_BATCH_POLL_INTERVAL "soon"`) || !strings.Contains(out.String(), `"poll_interval": "1m0s"`) {
		t.Errorf("printConfiguration = %v, printed:\n%s", err, out.String())
	}
}
