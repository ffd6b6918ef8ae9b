package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/config"
)

// TestBuild_OneClientPerService: wired with every flow on (the batch path,
// the queue path, reconcile, token metrics to Application Insights with
// Entra ID), the handler builds one Table Storage client, one Blob Storage
// client, and one credential per identity however many clients use it.
func TestBuild_OneClientPerService(t *testing.T) {
	t.Parallel()
	const (
		app     = "11111111-1111-1111-1111-111111111111"
		monitor = "22222222-2222-2222-2222-222222222222"
	)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "host.json"), []byte(`{"functionTimeout":"00:05:00"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	copyModels(t, root)
	for _, tt := range []struct {
		name        string
		aoaiID      string
		credentials int
	}{{"one identity for everything", app, 1}, {"Azure OpenAI and Monitor as another identity", monitor, 2}} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{
				"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "FUNCTIONS_APP_ROOT_PATH": root,
				"AzureWebJobsStorage__tableServiceUri": "https://acct.table.core.windows.net",
				"AzureWebJobsStorage__blobServiceUri":  "https://acct.blob.core.windows.net",
				"AzureWebJobsStorage__clientId":        app,
				"OFFPATH_AOAI_ENDPOINT":                "https://res.openai.azure.com",
				"OFFPATH_AOAI_CLIENT_ID":               tt.aoaiID,
				"OFFPATH_AOAI_RESOURCE_ID":             "/subscriptions/0/resourceGroups/rg/providers/Microsoft.CognitiveServices/accounts/res",
				"APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=00000000-0000-0000-0000-000000000001;" +
					"IngestionEndpoint=https://westeurope-5.in.applicationinsights.azure.com/",
				"APPLICATIONINSIGHTS_AUTHENTICATION_STRING": "Authorization=AAD;ClientId=" + app,
			}
			cfg, err := config.LoadHandler(func(k string) string { return env[k] }, os.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			h, err := build(cfg, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer h.stopMetrics(context.Background())
			if !h.batch || cfg.Reconcile == nil || cfg.TokenMetrics == nil {
				t.Fatalf("not every flow is on: batch %v, reconcile %v, token metrics %v", h.batch, cfg.Reconcile, cfg.TokenMetrics)
			}
			want := map[string]int{"credential": tt.credentials, "tables": 1, "blobs": 1}
			for kind, n := range want {
				if got := h.services.built[kind]; got != n {
					t.Errorf("built %d %s, want %d (all built: %v)", got, kind, n, h.services.built)
				}
			}
		})
	}
}
