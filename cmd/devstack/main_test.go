package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteSettings_OverridesTheExample(t *testing.T) {
	t.Parallel()
	app := t.TempDir()
	got, err := writeSettings("../../local.settings.json.example", app, map[string]string{"AzureWebJobsStorage": "conn"})
	if err != nil {
		t.Fatalf("writeSettings: %v", err)
	}
	if got["AzureWebJobsStorage"] != "conn" || got["DEVHOST_FUNCTION_KEY"] == "" || got["FUNCTIONS_WORKER_RUNTIME"] != "custom" {
		t.Errorf("settings = %v", got)
	}
	b, err := os.ReadFile(filepath.Join(app, "local.settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Values map[string]string
		Host   struct{ LocalHttpPort int }
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Values["AzureWebJobsStorage"] != "conn" || doc.Host.LocalHttpPort != 7071 {
		t.Errorf("written file %s: %v", b, err)
	}
}
