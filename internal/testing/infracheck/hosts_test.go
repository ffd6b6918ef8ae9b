package infracheck

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// appSettingName is what App Service accepts as an app-setting name:
// letters, digits, periods and underscores. Anything else (a hyphen in
// AzureWebJobs.<function-name>.Disabled) is not a setting a Linux app can
// carry, so it silently does nothing.
var appSettingName = regexp.MustCompile(`^[A-Za-z0-9_.]+$`)

// allowListSetting is the host.json "functions" allow-list as settings:
// AzureFunctionsJobHost__functions__<index>.
var allowListSetting = regexp.MustCompile(`^AzureFunctionsJobHost__functions__([0-9]+)$`)

// functionHost is one place the Functions host runs the app, with the
// settings it gets there.
type functionHost struct {
	name     string
	settings map[string]string
	// appService is set for a Function App: its setting names must be
	// valid app-setting names.
	appService bool
}

// hostRuns returns the functions a host loads, as the Functions host
// decides: the "functions" allow-list (host.json's, replaced by the
// AzureFunctionsJobHost__functions__N settings when any is set) or every
// function, less those whose AzureWebJobs.<name>.Disabled is true. An
// allow-list entry that names no function, or a list with a gap, is an
// error: the host would quietly run less than the list says.
func hostRuns(h functionHost, all []string, hostList []string) ([]string, error) {
	var errs []error
	if h.appService {
		for _, k := range sortedKeys(h.settings) {
			if !appSettingName.MatchString(k) {
				errs = append(errs, fmt.Errorf("%s: %q is not a valid app-setting name (letters, digits, periods and underscores only): the setting does nothing", h.name, k))
			}
		}
	}
	list := hostList
	byIndex := map[int]string{}
	for k, v := range h.settings {
		if m := allowListSetting.FindStringSubmatch(k); m != nil {
			i, _ := strconv.Atoi(m[1])
			byIndex[i] = v
		}
	}
	if len(byIndex) > 0 {
		list = nil
		for i := range len(byIndex) {
			v, ok := byIndex[i]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: AzureFunctionsJobHost__functions__%d is missing: the allow-list has a gap", h.name, i))
				continue
			}
			list = append(list, v)
		}
	}
	for _, fn := range list {
		if !slices.Contains(all, fn) {
			errs = append(errs, fmt.Errorf("%s: the allow-list names %q, which is no function", h.name, fn))
		}
	}
	var runs []string
	for _, fn := range all {
		if len(list) > 0 && !slices.Contains(list, fn) {
			continue
		}
		disabled := "AzureWebJobs." + fn + ".Disabled"
		if h.appService && !appSettingName.MatchString(disabled) {
			disabled = "" // not a setting such a host can have
		}
		if v := strings.ToLower(h.settings[disabled]); disabled != "" && (v == "true" || v == "1") {
			continue
		}
		runs = append(runs, fn)
	}
	return runs, errors.Join(errs...)
}

// checkHosts proves where each function runs: want maps every function to
// the one host that must run it, and each host must run exactly those.
func checkHosts(hosts []functionHost, all, hostList []string, want map[string]string) error {
	var errs []error
	where := map[string][]string{}
	for _, h := range hosts {
		runs, err := hostRuns(h, all, hostList)
		errs = append(errs, err)
		for _, fn := range runs {
			where[fn] = append(where[fn], h.name)
		}
	}
	for _, fn := range all {
		switch got := where[fn]; {
		case len(got) == 0:
			errs = append(errs, fmt.Errorf("function %s runs nowhere (want %s)", fn, want[fn]))
		case len(got) > 1 || got[0] != want[fn]:
			errs = append(errs, fmt.Errorf("function %s runs on %s, want only %s", fn, strings.Join(got, " and "), want[fn]))
		}
	}
	return errors.Join(errs...)
}

const (
	functionAppHost = "the Function App (functionapp.bicep)"
	workerHost      = "the AKS workers (infra/k8s/deployment.yaml)"
)

// TestFunctions_EachRunsOnOneHost: the AKS workers run the functions whose
// Service Bus queue the ScaledObject scales them on, and nothing else; the
// Function App runs every other function, and not those.
func TestFunctions_EachRunsOnOneHost(t *testing.T) {
	t.Parallel()
	fns, err := loadFunctions(funcsDir)
	if err != nil {
		t.Fatal(err)
	}
	var hostDoc struct {
		Functions []string `json:"functions"`
	}
	if err := yaml.Unmarshal(readFile(t, hostJSON), &hostDoc); err != nil {
		t.Fatal(err)
	}
	appSettings, err := bicepSettings(string(readFile(t, infraDir+"/modules/functionapp.bicep")))
	if err != nil {
		t.Fatal(err)
	}
	worker, _ := workerEnv(t)
	scaled := scaledQueues(t)
	var all []string
	want := map[string]string{}
	for _, fn := range fns {
		all = append(all, fn.name)
		want[fn.name] = functionAppHost
		for _, b := range fn.bindings {
			if b.str("type") == "serviceBusTrigger" && scaled[b.str("queueName")] {
				want[fn.name] = workerHost
			}
		}
	}
	if !slices.ContainsFunc(all, func(fn string) bool { return want[fn] == workerHost }) {
		t.Fatalf("no function is triggered by a queue the ScaledObjects scale on (%v)", sortedKeys(scaled))
	}
	hosts := []functionHost{
		{name: functionAppHost, settings: appSettings, appService: true},
		{name: workerHost, settings: worker},
	}
	if err := checkHosts(hosts, all, hostDoc.Functions, want); err != nil {
		t.Error(err)
	}
}

// scaledQueues returns the queues the KEDA ScaledObjects scale on.
func scaledQueues(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, doc := range loadManifests(t, k8sDir) {
		if !isKEDA(doc) || doc.kind != "ScaledObject" {
			continue
		}
		var so scaledObject
		if err := yaml.Unmarshal(doc.raw, &so); err != nil {
			t.Fatal(err)
		}
		for _, tr := range so.Spec.Triggers {
			if q, ok := tr.Metadata["queueName"].(string); ok && tr.Type == "azure-servicebus" {
				out[q] = true
			}
		}
	}
	return out
}

func TestFunctions_BrokenHostsFail(t *testing.T) {
	t.Parallel()
	all := []string{"api", "ingest-process", "ingest-process-heavy"}
	want := map[string]string{"api": functionAppHost, "ingest-process": functionAppHost, "ingest-process-heavy": workerHost}
	worker := functionHost{name: workerHost, settings: map[string]string{"AzureFunctionsJobHost__functions__0": "ingest-process-heavy"}}
	app := func(settings map[string]string) []functionHost {
		return []functionHost{{name: functionAppHost, settings: settings, appService: true}, worker}
	}
	good := map[string]string{"AzureFunctionsJobHost__functions__0": "api", "AzureFunctionsJobHost__functions__1": "ingest-process"}
	if err := checkHosts(app(good), all, nil, want); err != nil {
		t.Errorf("checkHosts(good) = %v", err)
	}
	tests := []struct {
		name     string
		hosts    []functionHost
		hostList []string
		want     string
	}{
		{"hyphenated Disabled setting", app(map[string]string{"AzureWebJobs.ingest-process-heavy.Disabled": "true"}), nil,
			`"AzureWebJobs.ingest-process-heavy.Disabled" is not a valid app-setting name`},
		{"hyphenated Disabled setting does nothing", app(map[string]string{"AzureWebJobs.ingest-process-heavy.Disabled": "true"}), nil,
			"function ingest-process-heavy runs on " + functionAppHost + " and " + workerHost},
		{"no restriction at all", app(map[string]string{}), nil,
			"function ingest-process-heavy runs on " + functionAppHost + " and " + workerHost},
		{"allow-list forgets a function", app(map[string]string{"AzureFunctionsJobHost__functions__0": "api"}), nil,
			"function ingest-process runs nowhere"},
		{"allow-list has a gap", app(map[string]string{"AzureFunctionsJobHost__functions__0": "api", "AzureFunctionsJobHost__functions__2": "ingest-process"}), nil,
			"AzureFunctionsJobHost__functions__1 is missing"},
		{"allow-list misspells a function", app(map[string]string{"AzureFunctionsJobHost__functions__0": "api", "AzureFunctionsJobHost__functions__1": "ingest_process"}), nil,
			`names "ingest_process", which is no function`},
		{"worker unrestricted", []functionHost{{name: functionAppHost, settings: good, appService: true}, {name: workerHost, settings: map[string]string{}}}, nil,
			"function api runs on " + functionAppHost + " and " + workerHost},
		{"host.json list without the heavy function", []functionHost{{name: functionAppHost, settings: map[string]string{}, appService: true},
			{name: workerHost, settings: map[string]string{}}}, []string{"api", "ingest-process"},
			"function ingest-process-heavy runs nowhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := checkHosts(tt.hosts, all, tt.hostList, want); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkHosts = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// A valid Disabled name (no hyphen) is honoured.
	plain := []string{"api", "heavy"}
	runs, err := hostRuns(functionHost{name: "app", settings: map[string]string{"AzureWebJobs.heavy.Disabled": "true"}, appService: true}, plain, nil)
	if err != nil || !slices.Equal(runs, []string{"api"}) {
		t.Errorf("hostRuns(AzureWebJobs.heavy.Disabled) = %v, %v; want [api]", runs, err)
	}
}

// TestServiceBus_NoDuplicateDetectionPromise: the claim checks are sent by
// the Functions host's output binding, which gives each message its own
// MessageId (a custom handler sets only the body), so duplicate detection
// can never match two sends of one claim check. The queues must not claim
// it; duplicates are caught where a document version is processed.
func TestServiceBus_NoDuplicateDetectionPromise(t *testing.T) {
	t.Parallel()
	text := string(readFile(t, infraDir+"/modules/servicebus.bicep"))
	if !regexp.MustCompile(`(?m)^\s*requiresDuplicateDetection:\s*false\s*$`).MatchString(text) {
		t.Error("servicebus.bicep: requiresDuplicateDetection must be false: the output binding cannot set MessageId")
	}
	if strings.Contains(text, "duplicateDetectionHistoryTimeWindow") {
		t.Error("servicebus.bicep sets duplicateDetectionHistoryTimeWindow without duplicate detection")
	}
}
