package infracheck

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bicepFile is one .bicep file's text, by its path relative to infra/.
type bicepFile struct {
	name string
	text string
}

func loadBicep(t *testing.T) []bicepFile {
	t.Helper()
	var files []bicepFile
	err := filepath.WalkDir(infraDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".bicep" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(infraDir, path)
		files = append(files, bicepFile{name: filepath.ToSlash(rel), text: string(data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no .bicep files under infra/")
	}
	return files
}

// TestBicep_Parses runs infra/scripts/check-bicep.mjs (tree-sitter-bicep)
// over infra/ and over a broken file that must fail.
func TestBicep_Parses(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(repoRoot, "node_modules", "tree-sitter-bicep", "tree-sitter-bicep.wasm"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the Bicep syntax check needs node and the pinned npm packages (npm ci): %v", err)
		}
		t.Skipf("the Bicep syntax check needs node and the pinned npm packages (npm ci): %v", err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(node, append([]string{"infra/scripts/check-bicep.mjs"}, args...)...)
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("infra"); err != nil {
		t.Errorf("check-bicep infra: %v\n%s", err, out)
	}
	broken, err := filepath.Abs("testdata/bicep/broken.bicep")
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(broken)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "broken.bicep:") {
		t.Errorf("check-bicep on a broken file: err = %v, output:\n%s\nwant exit status 1 naming the file", err, out)
	}
}

var (
	resourceDecl = regexp.MustCompile(`(?m)^\s*resource\s+(\w+)\s+'([^']*)'`)
	typeVersion  = regexp.MustCompile(`^([A-Za-z]+\.[A-Za-z]+(?:/[A-Za-z]+)+)@(\d{4}-\d{2}-\d{2}(?:-preview)?)$`)
)

// checkResourceTypes: every resource names its type with a pinned API
// version, one type keeps one version across files, and every type offpath
// needs is declared somewhere.
func checkResourceTypes(files []bicepFile, required []string) error {
	var errs []error
	versions := map[string]string{}
	for _, f := range files {
		for _, m := range resourceDecl.FindAllStringSubmatch(f.text, -1) {
			tv := typeVersion.FindStringSubmatch(m[2])
			if tv == nil {
				errs = append(errs, fmt.Errorf("%s: resource %s: %q is not <Provider/type>@<yyyy-mm-dd[-preview]>", f.name, m[1], m[2]))
				continue
			}
			if v, ok := versions[tv[1]]; ok && v != tv[2] {
				errs = append(errs, fmt.Errorf("%s: resource %s: %s@%s, elsewhere @%s: keep one API version per type", f.name, m[1], tv[1], tv[2], v))
			}
			versions[tv[1]] = tv[2]
		}
		if strings.Contains(f.text, "'br:") || strings.Contains(f.text, "'br/") || strings.Contains(f.text, "'ts:") {
			errs = append(errs, fmt.Errorf("%s: registry modules need MCR or a template spec at restore time; keep modules local", f.name))
		}
	}
	for _, typ := range required {
		if _, ok := versions[typ]; !ok {
			errs = append(errs, fmt.Errorf("no resource of type %s", typ))
		}
	}
	return errors.Join(errs...)
}

var requiredTypes = []string{
	"Microsoft.Resources/resourceGroups",
	"Microsoft.ManagedIdentity/userAssignedIdentities",
	"Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials",
	"Microsoft.Storage/storageAccounts",
	"Microsoft.Storage/storageAccounts/blobServices/containers",
	"Microsoft.Storage/storageAccounts/tableServices/tables",
	"Microsoft.Storage/storageAccounts/managementPolicies",
	"Microsoft.ServiceBus/namespaces",
	"Microsoft.ServiceBus/namespaces/queues",
	"Microsoft.CognitiveServices/accounts",
	"Microsoft.CognitiveServices/accounts/deployments",
	"Microsoft.Web/serverfarms",
	"Microsoft.Web/sites",
	"Microsoft.Web/sites/config",
	"Microsoft.OperationalInsights/workspaces",
	"Microsoft.Insights/components",
	"Microsoft.EventGrid/systemTopics",
	"Microsoft.Authorization/roleAssignments",
	"Microsoft.Insights/actionGroups",
	"Microsoft.Insights/scheduledQueryRules",
	"Microsoft.Insights/metricAlerts",
	"Microsoft.ContainerRegistry/registries",
	"Microsoft.ContainerService/managedClusters",
}

// Settings Flex Consumption rejects or ignores (Flex deprecations list).
var flexForbiddenSettings = []string{
	"FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION", "WEBSITE_RUN_FROM_PACKAGE",
	"WEBSITE_CONTENTSHARE", "WEBSITE_CONTENTAZUREFILECONNECTIONSTRING", "SCM_DO_BUILD_DURING_DEPLOYMENT",
	"ENABLE_ORYX_BUILD", "WEBSITE_NODE_DEFAULT_VERSION",
}

// block returns the text of the object literal that starts at the first
// match of start (e.g. "var flexAppSettings = {"), braces balanced.
func block(text, start string) (string, bool) {
	i := strings.Index(text, start)
	if i < 0 {
		return "", false
	}
	depth := 0
	for j := i + len(start) - 1; j < len(text); j++ {
		switch text[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return text[i : j+1], true
			}
		}
	}
	return "", false
}

// checkFlexSettings: the Flex app settings hold none of the settings Flex
// rejects, the Elastic Premium-only settings are the only place
// FUNCTIONS_WORKER_RUNTIME appears, and Flex gets the Flex settings alone.
func checkFlexSettings(text string) error {
	var errs []error
	flex, ok := block(text, "var flexAppSettings = {")
	if !ok {
		return errors.New("functionapp.bicep: no `var flexAppSettings = {` block")
	}
	for _, s := range flexForbiddenSettings {
		if regexp.MustCompile(`(?m)^\s*'?` + s + `'?\s*:`).MatchString(flex) {
			errs = append(errs, fmt.Errorf("functionapp.bicep: %s among the Flex app settings; Flex takes the runtime from functionAppConfig.runtime and rejects it", s))
		}
	}
	ep, _ := block(text, "var elasticPremiumOnlySettings = {")
	rest := strings.Replace(text, ep, "", 1)
	if regexp.MustCompile(`(?m)^\s*'?FUNCTIONS_WORKER_RUNTIME'?\s*:`).MatchString(rest) {
		errs = append(errs, errors.New("functionapp.bicep: FUNCTIONS_WORKER_RUNTIME is set outside elasticPremiumOnlySettings"))
	}
	if !regexp.MustCompile(`properties:\s*isFlex\s*\?\s*flexAppSettings\s*:`).MatchString(text) {
		errs = append(errs, errors.New("functionapp.bicep: the appsettings resource must use flexAppSettings alone on Flex (`properties: isFlex ? flexAppSettings : ...`)"))
	}
	if !strings.Contains(text, "runtime: {") || !strings.Contains(text, "functionAppConfig: {") {
		errs = append(errs, errors.New("functionapp.bicep: Flex needs functionAppConfig.runtime"))
	}
	return errors.Join(errs...)
}

func bicepByName(t *testing.T, files []bicepFile, name string) string {
	t.Helper()
	for _, f := range files {
		if f.name == name {
			return f.text
		}
	}
	t.Fatalf("no infra/%s", name)
	return ""
}

func TestBicep_Text(t *testing.T) {
	t.Parallel()
	files := loadBicep(t)
	checks := map[string]error{
		"resource types":     checkResourceTypes(files, requiredTypes),
		"flex settings":      checkFlexSettings(bicepByName(t, files, "modules/functionapp.bicep")),
		"no secrets":         checkNoSecrets(files),
		"local auth":         checkLocalAuth(files),
		"roles":              checkRoles(files),
		"modules and params": checkModules(t, files),
		"ordering":           checkOrdering(files),
	}
	for name, err := range checks {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// checkOrdering: the model deployments of one account are written one at a
// time, and so are the two federated credentials.
func checkOrdering(files []bicepFile) error {
	var errs []error
	for _, f := range files {
		for _, m := range resourceDecl.FindAllStringSubmatchIndex(f.text, -1) {
			decl, sym := f.text[m[4]:m[5]], f.text[m[2]:m[3]]
			before := f.text[max(0, m[0]-200):m[0]]
			rest, _, _ := strings.Cut(f.text[m[1]:], "\n")
			isLoop := strings.HasSuffix(strings.TrimSpace(rest), "[")
			if strings.HasPrefix(decl, "Microsoft.CognitiveServices/accounts/deployments@") && isLoop && !strings.Contains(before, "@batchSize(1)") {
				errs = append(errs, fmt.Errorf("%s: %s: model deployments must be created one at a time (@batchSize(1))", f.name, sym))
			}
		}
		if n := strings.Count(f.text, "/federatedIdentityCredentials@"); n > 1 && strings.Count(f.text, "dependsOn:") < n-1 {
			errs = append(errs, fmt.Errorf("%s: %d federated credentials but fewer dependsOn chains: create them one after the other", f.name, n))
		}
	}
	return errors.Join(errs...)
}

func TestBicep_BrokenTextFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		check func(bicepFile) error
		text  string
		want  string
	}{
		{"unpinned api version", func(f bicepFile) error { return checkResourceTypes([]bicepFile{f}, nil) },
			"resource sb 'Microsoft.ServiceBus/namespaces' = {\n}\n", "is not <Provider/type>@"},
		{"two api versions", func(f bicepFile) error { return checkResourceTypes([]bicepFile{f}, nil) },
			"resource a 'Microsoft.Web/sites@2024-04-01' = {\n}\nresource b 'Microsoft.Web/sites@2023-12-01' existing = {\n}\n", "keep one API version"},
		{"missing type", func(f bicepFile) error { return checkResourceTypes([]bicepFile{f}, []string{"Microsoft.Web/sites"}) },
			"", "no resource of type Microsoft.Web/sites"},
		{"registry module", func(f bicepFile) error { return checkResourceTypes([]bicepFile{f}, nil) },
			"module sb 'br/public:avm/res/service-bus/namespace:0.1.0' = {\n}\n", "keep modules local"},
		{"worker runtime on flex", func(f bicepFile) error { return checkFlexSettings(f.text) },
			"var flexAppSettings = {\n  FUNCTIONS_WORKER_RUNTIME: 'custom'\n}\nproperties: isFlex ? flexAppSettings : x\nfunctionAppConfig: {\nruntime: {\n", "FUNCTIONS_WORKER_RUNTIME among the Flex app settings"},
		{"run from package on flex", func(f bicepFile) error { return checkFlexSettings(f.text) },
			"var flexAppSettings = {\n  WEBSITE_RUN_FROM_PACKAGE: '1'\n}\nproperties: isFlex ? flexAppSettings : x\nfunctionAppConfig: {\nruntime: {\n", "WEBSITE_RUN_FROM_PACKAGE"},
		{"listKeys", func(f bicepFile) error { return checkNoSecrets([]bicepFile{f}) },
			"var cs = 'AccountKey=${stg.listKeys().keys[0].value}'\n", "no keys or connection strings"},
		{"connection string setting", func(f bicepFile) error { return checkNoSecrets([]bicepFile{f}) },
			"var s = {\n  ServiceBus: sbConnection\n}\n", "no keys or connection strings"},
		{"shared key on", func(f bicepFile) error { return checkNoSecrets([]bicepFile{f}) },
			"properties: {\n  allowSharedKeyAccess: true\n}\n", "no keys"},
		{"service bus local auth", func(f bicepFile) error { return checkLocalAuth([]bicepFile{f}) },
			"resource sb 'Microsoft.ServiceBus/namespaces@2024-01-01' = {\n  properties: {\n    minimumTlsVersion: '1.2'\n  }\n}\n", "lacks disableLocalAuth: true"},
		{"openai local auth", func(f bicepFile) error { return checkLocalAuth([]bicepFile{f}) },
			"resource a 'Microsoft.CognitiveServices/accounts@2024-10-01' = {\n  properties: {\n    customSubDomainName: 'x'\n  }\n}\n", "lacks disableLocalAuth: true"},
		{"unknown role guid", func(f bicepFile) error { return checkRoles([]bicepFile{f}) },
			"var r = '11111111-2222-3333-4444-555555555555'\n", "not a documented built-in role GUID"},
		{"swapped role guid", func(f bicepFile) error { return checkRoles([]bicepFile{f}) },
			"var roles = {\n  serviceBusDataSender: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0'\n}\n", `which is "Azure Service Bus Data Receiver"`},
		{"role by name", func(f bicepFile) error { return checkRoles([]bicepFile{f}) },
			"properties: {\n  roleDefinitionId: '/providers/Microsoft.Authorization/roleDefinitions/${id}'\n}\n", "build it with subscriptionResourceId"},
		{"parallel deployments", func(f bicepFile) error { return checkOrdering([]bicepFile{f}) },
			"resource d 'Microsoft.CognitiveServices/accounts/deployments@2024-10-01' = [\n  for d in ds: {\n  }\n]\n", "@batchSize(1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.check(bicepFile{name: "fixture.bicep", text: tt.text}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("check(%q) = %v, want an error containing %q", tt.text, err, tt.want)
			}
		})
	}
}
