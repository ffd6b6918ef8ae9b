package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/local/azurite"
)

// TestCLI_Webhooks: set prints the secret once, show does not; bad URLs
// and unknown tenants are refused; delete removes it.
func TestCLI_Webhooks(t *testing.T) {
	t.Parallel()
	az := azurite.Start(t)
	env := map[string]string{"AzureWebJobsStorage": az.ConnectionString()}
	mustRun(t, env, "tenants", "create", "-aliases", "summarize", "contoso")
	if _, err := offpath(t, env, "webhooks", "set", "nobody", "https://hooks.example.com/x"); err == nil {
		t.Error("set for an unknown tenant: no error")
	}
	if _, err := offpath(t, env, "webhooks", "set", "contoso", "http://hooks.example.com/x"); err == nil {
		t.Error("set with plain http: no error")
	}
	out := mustRun(t, env, "webhooks", "set", "contoso", "https://hooks.example.com/x")
	secret := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]{32}`).FindString(out)
	if secret == "" {
		t.Fatalf("set printed no secret:\n%s", out)
	}
	out = mustRun(t, env, "webhooks", "show", "contoso")
	if !strings.Contains(out, "https://hooks.example.com/x") || strings.Contains(out, secret[6:]) {
		t.Errorf("show:\n%s", out)
	}
	if out := mustRun(t, env, "webhooks", "events", "contoso"); out != "no webhook events for contoso\n" {
		t.Errorf("events of a new webhook:\n%s", out)
	}
	if out := mustRun(t, env, "webhooks", "events", "-json", "contoso"); strings.TrimSpace(out) != "[]" {
		t.Errorf("events -json of a new webhook:\n%s", out)
	}
	mustRun(t, env, "webhooks", "delete", "contoso")
	if _, err := offpath(t, env, "webhooks", "show", "contoso"); err == nil {
		t.Error("show after delete: no error")
	}
}
