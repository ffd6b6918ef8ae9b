package infracheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type azureYAML struct {
	Name  string `json:"name"`
	Infra struct {
		Provider string `json:"provider"`
		Path     string `json:"path"`
		Module   string `json:"module"`
	} `json:"infra"`
	Hooks    map[string]hook `json:"hooks"`
	Services map[string]struct {
		Project  string          `json:"project"`
		Host     string          `json:"host"`
		Language string          `json:"language"`
		Dist     string          `json:"dist"`
		Hooks    map[string]hook `json:"hooks"`
		Docker   struct {
			Path    string `json:"path"`
			Context string `json:"context"`
		} `json:"docker"`
		K8s struct {
			Namespace      string `json:"namespace"`
			DeploymentPath string `json:"deploymentPath"`
			Deployment     struct {
				Name string `json:"name"`
			} `json:"deployment"`
		} `json:"k8s"`
	} `json:"services"`
}

type hook struct {
	Posix struct {
		Run string `json:"run"`
	} `json:"posix"`
}

var (
	bicepOutput       = regexp.MustCompile(`(?m)^output\s+(\w+)\s`)
	bicepParamDefault = regexp.MustCompile(`(?m)^param\s+(\w+)\s+\w+(?:\s*=\s*'([^']*)')?`)
	requiredHookVar   = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*):\?`)
)

// TestAzd checks that azure.yaml, the hooks, the manifests' placeholders and
// the parameters file fit main.bicep: what azd reads must exist.
func TestAzd(t *testing.T) {
	t.Parallel()
	var a azureYAML
	if err := yaml.Unmarshal(readFile(t, repoRoot+"/azure.yaml"), &a); err != nil {
		t.Fatalf("azure.yaml: %v", err)
	}
	main := string(readFile(t, bicepMain))
	outputs := map[string]bool{}
	for _, m := range bicepOutput.FindAllStringSubmatch(main, -1) {
		outputs[m[1]] = true
	}
	defaults := map[string]string{}
	for _, m := range bicepParamDefault.FindAllStringSubmatch(main, -1) {
		defaults[m[1]] = m[2]
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if a.Infra.Path != "infra" || a.Infra.Module != "main" {
		bad("azure.yaml infra: path %q module %q, want infra/main", a.Infra.Path, a.Infra.Module)
	}
	hooks := map[string]hook{}
	for name, h := range a.Hooks {
		hooks["project "+name] = h
	}
	api, heavy := a.Services["api"], a.Services["ingest-heavy"]
	if api.Host != "function" || api.Language != "custom" || api.Dist != "build/app" {
		bad("service api: host %q language %q dist %q, want function/custom/build/app (the folder make app builds)", api.Host, api.Language, api.Dist)
	}
	if heavy.Host != "aks" || heavy.Language != "docker" {
		bad("service ingest-heavy: host %q language %q, want aks/docker", heavy.Host, heavy.Language)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, heavy.Docker.Path)); err != nil {
		bad("service ingest-heavy: docker.path: %v", err)
	}
	if filepath.Clean(heavy.K8s.DeploymentPath) != "infra/k8s" {
		bad("service ingest-heavy: k8s.deploymentPath %q, want infra/k8s (the manifests checked here)", heavy.K8s.DeploymentPath)
	}
	if heavy.K8s.Namespace != defaults["workerNamespace"] {
		bad("service ingest-heavy: k8s.namespace %q, but main.bicep federates namespace %q", heavy.K8s.Namespace, defaults["workerNamespace"])
	}
	for name, h := range api.Hooks {
		hooks["api "+name] = h
	}
	for name, h := range heavy.Hooks {
		hooks["ingest-heavy "+name] = h
	}

	// Every env var a hook insists on is an output of main.bicep (azd
	// stores outputs in the environment) or one the operator sets first.
	operatorSet := map[string]bool{"AZURE_AKS_CLUSTER_NAME": true, "AZURE_AKS_RESOURCE_GROUP": true}
	for name, h := range hooks {
		script := strings.TrimPrefix(h.Posix.Run, "./")
		if !strings.HasPrefix(script, "infra/hooks/") {
			continue
		}
		info, err := os.Stat(filepath.Join(repoRoot, script))
		if err != nil {
			bad("hook %s: %v", name, err)
			continue
		}
		if info.Mode().Perm()&0o100 == 0 {
			bad("hook %s: %s is not executable", name, script)
		}
		for _, m := range requiredHookVar.FindAllStringSubmatch(string(readFile(t, filepath.Join(repoRoot, script))), -1) {
			if !outputs[m[1]] && !operatorSet[m[1]] {
				bad("hook %s needs %s, which main.bicep does not output", name, m[1])
			}
		}
	}

	// Every placeholder in the manifests is an output, or the image azd
	// builds for the service.
	image := "SERVICE_" + strings.ToUpper(strings.ReplaceAll("ingest-heavy", "-", "_")) + "_IMAGE_NAME"
	files, _ := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	deploymentName := ""
	for _, f := range files {
		text := readFile(t, f)
		for _, m := range placeholder.FindAllSubmatch(text, -1) {
			if name := string(m[1]); !outputs[name] && name != image {
				bad("%s: ${%s} is neither an output of main.bicep nor %s", filepath.Base(f), name, image)
			}
		}
		if regexp.MustCompile(`(?m)^kind: Deployment$`).Match(text) {
			var d struct {
				Metadata struct{ Name string } `json:"metadata"`
			}
			rendered, _ := render(text, fakeEnv)
			_ = yaml.Unmarshal(rendered, &d)
			deploymentName = d.Metadata.Name
		}
		if regexp.MustCompile(`(?m)^kind: ServiceAccount$`).Match(text) && !strings.Contains(string(text), "name: "+defaults["workerServiceAccountName"]+"\n") {
			bad("%s: the service account is not %q, the name main.bicep federates", filepath.Base(f), defaults["workerServiceAccountName"])
		}
	}
	if deploymentName == "" || heavy.K8s.Deployment.Name != deploymentName {
		bad("service ingest-heavy: k8s.deployment.name %q, but the Deployment is %q (azd waits for it)", heavy.K8s.Deployment.Name, deploymentName)
	}

	// main.parameters.json passes only declared parameters and every
	// required one.
	var params struct {
		Parameters map[string]json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(readFile(t, infraDir+"/main.parameters.json"), &params); err != nil {
		t.Fatalf("main.parameters.json: %v", err)
	}
	declared := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^param\s+(\w+)\s+\w+(\s*=)?`).FindAllStringSubmatch(main, -1) {
		declared[m[1]] = m[2] != ""
		if m[2] == "" {
			if _, ok := params.Parameters[m[1]]; !ok {
				bad("main.parameters.json does not pass %s, which main.bicep requires", m[1])
			}
		}
	}
	for name := range params.Parameters {
		if _, ok := declared[name]; !ok {
			bad("main.parameters.json passes %s, which main.bicep does not declare", name)
		}
	}
	// An OFFPATH_* app setting that the Function App takes from one of
	// main.bicep's parameters is set from the azd environment variable of
	// the same name: otherwise `azd env set OFFPATH_…` does nothing.
	appSettings, err := bicepSettings(string(readFile(t, infraDir+"/modules/functionapp.bicep")))
	if err != nil {
		t.Fatal(err)
	}
	funcModule, ok := block(main, "module functionApp 'modules/functionapp.bicep' = {")
	if !ok {
		t.Fatal("main.bicep: no functionApp module")
	}
	for _, setting := range sortedKeys(appSettings) {
		param := appSettings[setting]
		if !strings.HasPrefix(setting, "OFFPATH_") || !regexp.MustCompile(`^\w+$`).MatchString(param) {
			continue
		}
		m := regexp.MustCompile(`(?m)^\s*` + param + `:\s*(\w+)\s*$`).FindStringSubmatch(funcModule)
		if m == nil {
			continue // from a module output, not a parameter
		}
		if _, ok := declared[m[1]]; !ok {
			continue
		}
		if raw, ok := params.Parameters[m[1]]; !ok || !strings.Contains(string(raw), "${"+setting) {
			bad("main.parameters.json: %s (app setting %s) is not mapped from ${%s}", m[1], setting, setting)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// TestDockerfile checks that the worker image holds what `make app` puts in
// the app folder and runs it the way the Functions host needs.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	docker := string(readFile(t, k8sDir+"/Dockerfile"))
	makefile := string(readFile(t, repoRoot+"/Makefile"))
	var errs []error
	for _, m := range regexp.MustCompile(`(?m)^\s*cp (?:-R )?(.+) \$\(APP\)/\s*$`).FindAllStringSubmatch(makefile, -1) {
		for _, src := range strings.Fields(m[1]) {
			if !strings.Contains(docker, src) {
				errs = append(errs, fmt.Errorf("make app copies %s into the app folder, the Dockerfile does not", src))
			}
		}
	}
	for _, want := range []string{
		"FROM mcr.microsoft.com/azure-functions/dotnet:4",
		"AzureWebJobsScriptRoot=/home/site/wwwroot",
		"FUNCTIONS_WORKER_RUNTIME=custom",
		"GOOS=linux GOARCH=amd64",
		"-o /out/wwwroot/handler ./cmd/handler",
		"chmod 0755 /out/wwwroot/handler",
	} {
		if !strings.Contains(docker, want) {
			errs = append(errs, fmt.Errorf("Dockerfile lacks %q", want))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

type catalogDoc struct {
	Aliases map[string]struct {
		Queue *struct {
			Deployment string `json:"deployment"`
		} `json:"queue"`
		Batch []struct {
			Deployment string `json:"deployment"`
		} `json:"batch"`
	} `json:"aliases"`
}

type modelDeployment struct {
	Name     string `json:"name"`
	Model    string `json:"model"`
	Version  string `json:"version"`
	SKU      string `json:"sku"`
	Capacity int    `json:"capacity"`
	Use      string `json:"use"`
}

// checkModelDeployments: every deployment the model catalog names exists,
// batch ones as GlobalBatch (or DataZoneBatch) and queue ones as online
// SKUs, and batch deployments come after the online ones (the Bicep
// creates them in file order).
func checkModelDeployments(catalog catalogDoc, deployments []modelDeployment) error {
	var errs []error
	byName := map[string]modelDeployment{}
	batchSeen := false
	for _, d := range deployments {
		isBatch := strings.HasSuffix(d.SKU, "Batch")
		if d.Name == "" || d.Model == "" || d.Version == "" || d.Capacity <= 0 {
			errs = append(errs, fmt.Errorf("model deployment %+v: name, model, version and a positive capacity are required", d))
		}
		if isBatch != (d.Use == "batch") {
			errs = append(errs, fmt.Errorf("model deployment %s: sku %s with use %q", d.Name, d.SKU, d.Use))
		}
		if batchSeen && !isBatch {
			errs = append(errs, fmt.Errorf("model deployment %s: online deployments go before the batch ones", d.Name))
		}
		batchSeen = batchSeen || isBatch
		byName[d.Name] = d
	}
	for _, alias := range sortedKeys(catalog.Aliases) {
		a := catalog.Aliases[alias]
		if a.Queue != nil {
			if d, ok := byName[a.Queue.Deployment]; !ok || d.Use != "queue" {
				errs = append(errs, fmt.Errorf("models.json alias %s: queue deployment %q is not an online deployment in infra/model-deployments.json", alias, a.Queue.Deployment))
			}
		}
		for _, b := range a.Batch {
			if d, ok := byName[b.Deployment]; !ok || d.Use != "batch" {
				errs = append(errs, fmt.Errorf("models.json alias %s: batch deployment %q is not a GlobalBatch deployment in infra/model-deployments.json", alias, b.Deployment))
			}
		}
	}
	return errors.Join(errs...)
}

func TestModelDeployments(t *testing.T) {
	t.Parallel()
	var catalog catalogDoc
	if err := json.Unmarshal(readFile(t, repoRoot+"/models.json"), &catalog); err != nil {
		t.Fatalf("models.json: %v", err)
	}
	var deployments []modelDeployment
	if err := json.Unmarshal(readFile(t, infraDir+"/model-deployments.json"), &deployments); err != nil {
		t.Fatalf("model-deployments.json: %v", err)
	}
	if err := checkModelDeployments(catalog, deployments); err != nil {
		t.Error(err)
	}

	broken := append([]modelDeployment{{Name: "late", Model: "m", Version: "1", SKU: "GlobalStandard", Capacity: 1, Use: "queue"}}, deployments...)
	broken = append(broken[1:], broken[0])
	if err := checkModelDeployments(catalog, broken); err == nil || !strings.Contains(err.Error(), "go before the batch ones") {
		t.Errorf("checkModelDeployments(online after batch) = %v", err)
	}
	if err := checkModelDeployments(catalog, deployments[:1]); err == nil || !strings.Contains(err.Error(), "is not a GlobalBatch deployment") {
		t.Errorf("checkModelDeployments(without the batch deployment) = %v", err)
	}
}
