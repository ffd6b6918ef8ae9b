package sizing_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/sizing"
)

// The defaults committed under infra/ are what Compute derives for the
// scenarios documented in infra/README.md ("Sizing"): patching them with
// those plans changes nothing.
func TestCommittedInfraMatchesDefaults(t *testing.T) {
	t.Parallel()
	heavy, err := sizing.Compute(sizing.Inputs{TPM: 500_000, RPM: 3_000, TokensPerDocument: 40_000, CallsPerDocument: 10, LatencySeconds: 8, Share: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	light, err := sizing.Compute(sizing.Inputs{TPM: 500_000, RPM: 3_000, TokensPerDocument: 12_000, CallsPerDocument: 3, LatencySeconds: 8, Share: 0.4, MinInstanceCap: 40})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		plan sizing.Plan
	}{
		{"../../infra/k8s/scaledobject.yaml", heavy},
		{"../../infra/k8s/deployment.yaml", heavy},
		{"../../infra/main.parameters.json", light},
	} {
		text, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sizing.Patch(c.plan, text)
		if err != nil {
			t.Fatalf("Patch(%s) error = %v", c.path, err)
		}
		if string(got) != string(text) {
			t.Errorf("%s does not carry the documented default plan %+v; run the sizing and commit the result", c.path, c.plan)
		}
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	so := copyFile(t, "../../infra/k8s/scaledobject.yaml", dir)
	dep := copyFile(t, "../../infra/k8s/deployment.yaml", dir)
	params := copyFile(t, "../../infra/main.parameters.json", dir)
	plan := sizing.Plan{MaxReplicaCount: 17, MessageCount: 33, MaxConcurrentCalls: 9, TPMPerInstance: 123_456, RPMPerInstance: 789}

	if err := sizing.Apply(plan, so, dep, params); err != nil {
		t.Fatalf("Apply() error = %v", err)
	}
	wants := map[string][]string{
		so:     {"maxReplicaCount: 17\n", `messageCount: "33"`, "minReplicaCount: 0\n", "# Scales the heavy workers"},
		dep:    {"maxConcurrentCalls\n              value: \"9\"", "OFFPATH_AOAI_TPM_BUDGET\n              value: \"123456\"", "OFFPATH_AOAI_RPM_BUDGET\n              value: \"789\"", "value: ingest-process-heavy"},
		params: {`"maximumInstanceCount": {` + "\n" + `      "value": 17`, `"serviceBusMaxConcurrentCalls": {` + "\n" + `      "value": 9`, `"value": 123456`, `"value": 789`, `"${AZURE_ENV_NAME}"`},
	}
	for path, want := range wants {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(got), w) {
				t.Errorf("after Apply, %s lacks %q:\n%s", filepath.Base(path), w, got)
			}
		}
	}
}

func TestApply_RefusesAndWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	so := copyFile(t, "../../infra/k8s/scaledobject.yaml", dir)
	before, _ := os.ReadFile(so)
	other := filepath.Join(dir, "serviceaccount.yaml")
	if err := os.WriteFile(other, []byte("apiVersion: v1\nkind: ServiceAccount\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := sizing.Apply(sizing.Plan{MaxReplicaCount: 3, MessageCount: 4}, so, other)
	if err == nil || !strings.Contains(err.Error(), "serviceaccount.yaml") {
		t.Fatalf("Apply() error = %v, want one naming serviceaccount.yaml", err)
	}
	if after, _ := os.ReadFile(so); string(after) != string(before) {
		t.Errorf("Apply() wrote %s although another file failed", so)
	}
}

func TestPatch_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
	}{
		{"unknown file", "hello: world\n", "neither"},
		{"scaled object without messageCount", "kind: ScaledObject\nspec:\n  maxReplicaCount: 3\n", "messageCount"},
		{"scaled object with two maxReplicaCount", "kind: ScaledObject\nspec:\n  maxReplicaCount: 3\n  maxReplicaCount: 4\n  x:\n    messageCount: \"5\"\n", "found 2"},
		{"unquoted messageCount", "kind: ScaledObject\nspec:\n  maxReplicaCount: 3\n  x:\n    messageCount: 5\n", "messageCount"},
		{"deployment without budgets", "kind: Deployment\nspec:\n  env:\n    - name: " + sizing.EnvMaxConcurrentCalls + "\n      value: \"4\"\n", sizing.EnvTPMBudget},
		{"parameters without a sizing parameter", `{"$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#", "parameters": {}}`, sizing.ParamMaximumInstanceCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := sizing.Patch(sizing.Plan{MaxReplicaCount: 1, MessageCount: 1}, []byte(tt.text)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Patch(%q) error = %v, want one containing %q", tt.text, err, tt.want)
			}
		})
	}
}

func copyFile(t *testing.T, src, dir string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, data, 0o640); err != nil {
		t.Fatal(err)
	}
	return dst
}
