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
)

// binding is one entry of a function.json "bindings" array.
type binding map[string]any

func (b binding) str(key string) string { s, _ := b[key].(string); return s }

type function struct {
	name     string
	bindings []binding
}

func loadFunctions(dir string) ([]function, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var fns []function
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "function.json"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var doc struct {
			Bindings []binding `json:"bindings"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s/function.json: %w", e.Name(), err)
		}
		fns = append(fns, function{name: e.Name(), bindings: doc.Bindings})
	}
	return fns, nil
}

// host is what the checks need from host.json.
type host struct {
	CustomHandler struct {
		Description struct {
			DefaultExecutablePath string `json:"defaultExecutablePath"`
		} `json:"description"`
		EnableForwardingHTTPRequest bool `json:"enableForwardingHttpRequest"`
	} `json:"customHandler"`
	ExtensionBundle struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	} `json:"extensionBundle"`
	Extensions struct {
		HTTP struct {
			RoutePrefix *string `json:"routePrefix"`
		} `json:"http"`
	} `json:"extensions"`
}

var triggerKinds = map[string]string{
	"serviceBusTrigger": "ServiceBusTrigger",
	"blobTrigger":       "BlobTrigger",
	"timerTrigger":      "TimerTrigger",
	"httpTrigger":       "HTTPTrigger",
}

// identitySettings lists the settings an identity-based connection of each
// binding type needs (besides <name>__credential and <name>__clientId for
// the user-assigned identity).
var identitySettings = map[string][]string{
	"serviceBusTrigger": {"__fullyQualifiedNamespace"},
	"serviceBus":        {"__fullyQualifiedNamespace"},
	"blobTrigger":       {"__blobServiceUri", "__queueServiceUri"}, // poison-blob tracking uses queues
	"blob":              {"__blobServiceUri"},
	"queueTrigger":      {"__queueServiceUri"},
	"queue":             {"__queueServiceUri"},
	"table":             {"__tableServiceUri"},
}

var defaultConnection = map[string]string{
	"serviceBusTrigger": "AzureWebJobsServiceBus", "serviceBus": "AzureWebJobsServiceBus",
	"blobTrigger": "AzureWebJobsStorage", "blob": "AzureWebJobsStorage",
	"queueTrigger": "AzureWebJobsStorage", "queue": "AzureWebJobsStorage", "table": "AzureWebJobsStorage",
}

// place is where a function runs and the settings it gets there.
type place struct {
	name     string
	settings map[string]string
}

// checkFunctions: each function has one trigger the handler serves (by name
// for envelopes, by path prefix for forwarded HTTP), its connections have
// identity-based settings (and no connection string) wherever it runs, its
// queues and containers exist in the infra, and a blob trigger uses the
// Event Grid source Flex requires. Every handler registration has a
// function folder.
func checkFunctions(fns []function, h host, r routes, places func(fn string) []place, queues, containers map[string]bool) error {
	var errs []error
	seen := map[string]bool{}
	for _, fn := range fns {
		seen[fn.name] = true
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("functions/%s: %s", fn.name, fmt.Sprintf(format, args...)))
		}
		var triggers []binding
		for _, b := range fn.bindings {
			if b.str("type") == "" || b.str("direction") == "" || b.str("name") == "" {
				bad("a binding without type, direction or name: %v", map[string]any(b))
			}
			if strings.HasSuffix(b.str("type"), "Trigger") {
				triggers = append(triggers, b)
			}
		}
		if len(triggers) != 1 {
			bad("want exactly one trigger binding, found %d", len(triggers))
			continue
		}
		tr := triggers[0]
		typ := tr.str("type")
		// The host forwards only functions with one httpTrigger in and one http out.
		forwarded := typ == "httpTrigger" && h.CustomHandler.EnableForwardingHTTPRequest && len(fn.bindings) == 2 &&
			(fn.bindings[0].str("type") == "http" || fn.bindings[1].str("type") == "http")
		if forwarded {
			prefix := "api"
			if h.Extensions.HTTP.RoutePrefix != nil {
				prefix = *h.Extensions.HTTP.RoutePrefix
			}
			route := tr.str("route")
			if route == "" {
				route = fn.name
			}
			literal, _, _ := strings.Cut(route, "{")
			path := "/" + strings.Trim(prefix+"/"+literal, "/") + "/"
			served := false
			for _, p := range r.forward {
				served = served || strings.HasPrefix(path, p)
			}
			if !served {
				bad("HTTP requests to %s are forwarded, but the handler forwards only %q", path, r.forward)
			}
		} else if want, ok := triggerKinds[typ]; !ok {
			bad("trigger type %s: the handler's protocol layer has no trigger kind for it", typ)
		} else if got, ok := r.envelope[fn.name]; !ok {
			bad("the handler registers no route POST /%s (mux.HandleTrigger(%q, invoke.%s, ...))", fn.name, fn.name, want)
		} else if got != want {
			bad("the handler registers %s as invoke.%s, want invoke.%s", fn.name, got, want)
		}

		switch typ {
		case "serviceBusTrigger":
			if q := tr.str("queueName"); !queues[q] {
				bad("queue %q is not one the Bicep creates (%v)", q, sortedKeys(queues))
			}
			if tr.str("topicName") != "" {
				bad("topics are not provisioned")
			}
		case "blobTrigger":
			if tr.str("source") != "EventGrid" {
				bad(`blob trigger source is %q; Flex Consumption supports only "EventGrid"`, tr.str("source"))
			}
			container, _, ok := strings.Cut(tr.str("path"), "/")
			if !ok || !containers[container] {
				bad("blob trigger path %q: want <container>/..., with a container the Bicep creates (%v)", tr.str("path"), sortedKeys(containers))
			}
		case "timerTrigger":
			if s := tr.str("schedule"); !strings.HasPrefix(s, "%") && len(strings.Fields(s)) != 6 {
				bad("timer schedule %q: NCRONTAB needs six fields", s)
			}
		}

		for _, b := range fn.bindings {
			suffixes, ok := identitySettings[b.str("type")]
			if !ok {
				continue
			}
			conn := b.str("connection")
			if conn == "" {
				conn = defaultConnection[b.str("type")]
			}
			for _, p := range places(fn.name) {
				if _, ok := p.settings[conn]; ok {
					bad("%s sets %s: a connection string; use identity-based settings (%s__...)", p.name, conn, conn)
				}
				for _, s := range append(suffixes, "__credential", "__clientId") {
					if p.settings[conn+s] == "" {
						bad("binding %q (%s) uses connection %q, but %s does not set %s", b.str("name"), b.str("type"), conn, p.name, conn+s)
					}
				}
			}
		}
	}
	for name := range r.envelope {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("the handler registers %s, but there is no functions/%s/function.json", name, name))
		}
	}
	if h.CustomHandler.Description.DefaultExecutablePath != "handler" {
		errs = append(errs, fmt.Errorf("host.json defaultExecutablePath is %q; make app and the Dockerfile build \"handler\"", h.CustomHandler.Description.DefaultExecutablePath))
	}
	if !regexp.MustCompile(`^\[4(\.[0-9*]+)*,\s*5\.0\.0\)$`).MatchString(h.ExtensionBundle.Version) {
		errs = append(errs, fmt.Errorf("host.json extensionBundle.version %q: Flex needs [4.0.0, 5.0.0) or later within major 4", h.ExtensionBundle.Version))
	}
	return errors.Join(errs...)
}

var (
	bicepSettingLine = regexp.MustCompile(`^\s*'?([A-Za-z_][\w.-]*)'?\s*:\s*(.+)$`)
	bicepQueueVar    = regexp.MustCompile(`(?m)^var \w+QueueName = '([^']+)'`)
	bicepListItem    = regexp.MustCompile(`(?m)^\s+'([a-z0-9-]+)'\s*$`)
)

// bicepSettings reads the keys (and literal values, else the expression)
// of the Function App's Flex app settings.
func bicepSettings(functionApp string) (map[string]string, error) {
	obj, ok := block(functionApp, "var flexAppSettings = {")
	if !ok {
		return nil, errors.New("functionapp.bicep: no flexAppSettings")
	}
	settings := map[string]string{}
	lines := strings.Split(obj, "\n")
	for _, line := range lines[1 : len(lines)-1] {
		if strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		if m := bicepSettingLine.FindStringSubmatch(line); m != nil {
			settings[m[1]] = strings.Trim(strings.TrimSpace(m[2]), "'")
		}
	}
	return settings, nil
}

func TestFunctions_AgreeWithHostHandlerAndInfra(t *testing.T) {
	t.Parallel()
	fns, err := loadFunctions(funcsDir)
	if err != nil {
		t.Fatal(err)
	}
	var h host
	if err := json.Unmarshal(readFile(t, hostJSON), &h); err != nil {
		t.Fatalf("host.json: %v", err)
	}
	r, err := handlerRoutes(repoRoot+"/cmd/handler", repoRoot+"/internal")
	if err != nil {
		t.Fatal(err)
	}
	funcApp := string(readFile(t, infraDir+"/modules/functionapp.bicep"))
	appSettings, err := bicepSettings(funcApp)
	if err != nil {
		t.Fatal(err)
	}
	worker, heavy := workerEnv(t)
	places := func(fn string) []place {
		if fn == heavy {
			return []place{{"infra/k8s/deployment.yaml", worker}}
		}
		return []place{{"the Function App (functionapp.bicep)", appSettings}}
	}
	queues := map[string]bool{}
	for _, m := range bicepQueueVar.FindAllStringSubmatch(string(readFile(t, infraDir+"/modules/servicebus.bicep")), -1) {
		queues[m[1]] = true
	}
	containers := map[string]bool{}
	storage := string(readFile(t, infraDir+"/modules/storage.bicep"))
	_, list, _ := strings.Cut(storage, "var containerNames = [")
	list, _, _ = strings.Cut(list, "\n]")
	for _, m := range bicepListItem.FindAllStringSubmatch(list, -1) {
		containers[m[1]] = true
	}
	if len(queues) != 2 || !containers["incoming"] {
		t.Fatalf("could not read the queues (%v) and containers (%v) from the Bicep", queues, containers)
	}
	if err := checkFunctions(fns, h, r, places, queues, containers); err != nil {
		t.Error(err)
	}
}

// workerEnv returns the AKS worker container's environment and the function
// it is restricted to.
func workerEnv(t *testing.T) (map[string]string, string) {
	t.Helper()
	env := map[string]string{}
	for _, doc := range loadManifests(t, k8sDir) {
		if doc.kind != "Deployment" {
			continue
		}
		obj, err := coreObject(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range deploymentContainers(obj) {
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
		}
	}
	heavy := env["AzureFunctionsJobHost__functions__0"]
	if heavy == "" {
		t.Fatal("no worker Deployment restricted with AzureFunctionsJobHost__functions__0")
	}
	return env, heavy
}

func TestFunctions_BrokenFail(t *testing.T) {
	t.Parallel()
	h := host{}
	h.CustomHandler.Description.DefaultExecutablePath = "handler"
	h.CustomHandler.EnableForwardingHTTPRequest = true
	h.ExtensionBundle.Version = "[4.*, 5.0.0)"
	good := map[string]string{
		"AzureWebJobsStorage__blobServiceUri": "x", "AzureWebJobsStorage__queueServiceUri": "x",
		"AzureWebJobsStorage__credential": "managedidentity", "AzureWebJobsStorage__clientId": "x",
		"ServiceBus__fullyQualifiedNamespace": "x", "ServiceBus__credential": "managedidentity", "ServiceBus__clientId": "x",
	}
	places := func(string) []place { return []place{{"fixture settings", good}} }
	queues := map[string]bool{"doc-ingest": true}
	containers := map[string]bool{"incoming": true}
	r := routes{envelope: map[string]string{"ingest-process": "ServiceBusTrigger", "ingest-enqueue": "BlobTrigger", "nightly": "TimerTrigger"}, forward: []string{"/api/"}}

	fns, err := loadFunctions("testdata/functions/good")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFunctions(fns, h, r, places, queues, containers); err != nil {
		t.Errorf("checkFunctions(good) = %v", err)
	}
	tests := []struct {
		dir  string
		r    routes
		want string
	}{
		{"unknown-connection", r, `connection "Ingest", but fixture settings does not set Ingest__fullyQualifiedNamespace`},
		{"polling-blob", r, `Flex Consumption supports only "EventGrid"`},
		{"missing-queue", r, `queue "doc-ingest-urgent" is not one the Bicep creates`},
		{"five-field-timer", r, "six fields"},
		{"good", routes{envelope: map[string]string{"ingest-enqueue": "BlobTrigger", "nightly": "TimerTrigger"}, forward: []string{"/api/"}}, "registers no route POST /ingest-process"},
		{"good", routes{envelope: map[string]string{"ingest-process": "BlobTrigger", "ingest-enqueue": "BlobTrigger", "nightly": "TimerTrigger"}, forward: []string{"/api/"}}, "want invoke.ServiceBusTrigger"},
		{"good", routes{envelope: map[string]string{"ingest-process": "ServiceBusTrigger", "ingest-enqueue": "BlobTrigger", "nightly": "TimerTrigger"}, forward: []string{"/admin/"}}, "the handler forwards only"},
		{"good", routes{envelope: map[string]string{"ingest-process": "ServiceBusTrigger", "ingest-enqueue": "BlobTrigger", "nightly": "TimerTrigger", "orphan": "TimerTrigger"}, forward: []string{"/api/"}}, "no functions/orphan/function.json"},
	}
	for _, tt := range tests {
		t.Run(tt.dir+"/"+tt.want, func(t *testing.T) {
			t.Parallel()
			fns, err := loadFunctions("testdata/functions/" + tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkFunctions(fns, h, tt.r, places, queues, containers); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkFunctions(%s) = %v, want an error containing %q", tt.dir, err, tt.want)
			}
		})
	}
	withConnString := func(string) []place {
		s := map[string]string{"ServiceBus": "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=v"}
		for k, v := range good {
			s[k] = v
		}
		return []place{{"fixture settings", s}}
	}
	if err := checkFunctions(fns, h, r, withConnString, queues, containers); err == nil || !strings.Contains(err.Error(), "a connection string") {
		t.Errorf("checkFunctions(with a ServiceBus connection string) = %v, want a connection-string error", err)
	}
}
