package infracheck

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/config"
)

// bindingSetting is an app setting a function.json binding names
// (%NAME%): the host reads it, not the handler.
var bindingSetting = regexp.MustCompile(`%(\w+)%`)

// checkSettingsRead says which OFFPATH_* settings a place sets that
// nothing reads: neither the handler's configuration, given the place's
// settings (read asks for each name it looks up), nor a function binding.
// A renamed or mistyped setting would otherwise be ignored in silence and
// its default used.
func checkSettingsRead(places []place, read func(env map[string]string) map[string]bool, bound map[string]bool) error {
	var errs []error
	for _, p := range places {
		asked := read(p.settings)
		for _, name := range sortedKeys(p.settings) {
			if strings.HasPrefix(name, "OFFPATH_") && !asked[name] && !bound[name] {
				errs = append(errs, fmt.Errorf("%s sets %s, which neither the handler's configuration nor a function binding reads", p.name, name))
			}
		}
	}
	return errors.Join(errs...)
}

// handlerReads is the settings the handler's configuration looks up when
// the environment is env (its values need not be valid: what is read
// depends only on what is set).
func handlerReads(env map[string]string) map[string]bool {
	asked := map[string]bool{}
	getenv := func(name string) string { asked[name] = true; return env[name] }
	readFile := func(name string) ([]byte, error) {
		if filepath.Base(name) == "host.json" {
			return os.ReadFile(hostJSON)
		}
		return os.ReadFile(filepath.Join(repoRoot, filepath.Base(name)))
	}
	_, _ = config.Inspect(getenv, readFile)
	return asked
}

func functionBindingSettings(t *testing.T) map[string]bool {
	t.Helper()
	bound := map[string]bool{}
	err := filepath.WalkDir(funcsDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "function.json" {
			return err
		}
		data, err := os.ReadFile(path)
		for _, m := range bindingSetting.FindAllSubmatch(data, -1) {
			bound[string(m[1])] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return bound
}

// TestSettings_TheHandlerReadsWhatTheInfraSets: every OFFPATH_* setting
// the Function App and the AKS workers get is read by the handler (or by
// the host, for a binding).
func TestSettings_TheHandlerReadsWhatTheInfraSets(t *testing.T) {
	t.Parallel()
	appSettings, err := bicepSettings(string(readFile(t, infraDir+"/modules/functionapp.bicep")))
	if err != nil {
		t.Fatal(err)
	}
	worker, _ := workerEnv(t)
	places := []place{{"the Function App (functionapp.bicep)", appSettings}, {"infra/k8s/deployment.yaml", worker}}
	bound := functionBindingSettings(t)
	if !bound["OFFPATH_BATCH_POLL_SCHEDULE"] {
		t.Fatalf("could not read the settings the function bindings name: %v", slices.Sorted(maps.Keys(bound)))
	}
	if err := checkSettingsRead(places, handlerReads, bound); err != nil {
		t.Error(err)
	}
}

// TestSettings_UnreadFails: a setting nothing reads is named, wherever it
// is set; one the handler reads only with another set (the batch knobs
// with the endpoint) is found read when the place sets both.
func TestSettings_UnreadFails(t *testing.T) {
	t.Parallel()
	bound := map[string]bool{"OFFPATH_BATCH_POLL_SCHEDULE": true}
	good := place{"fixture", map[string]string{"OFFPATH_AOAI_ENDPOINT": "x", "OFFPATH_BATCH_QUOTA": "x", "OFFPATH_BATCH_POLL_SCHEDULE": "x", "ServiceBus__clientId": "x"}}
	if err := checkSettingsRead([]place{good}, handlerReads, bound); err != nil {
		t.Errorf("good fixture: %v", err)
	}
	for name, env := range map[string]map[string]string{
		"a misspelt setting":            {"OFFPATH_AOAI_ENDPIONT": "x"},
		"a batch knob without the path": {"OFFPATH_BATCH_QUOTA": "x"},
	} {
		var unread string
		for k := range env {
			unread = k
		}
		err := checkSettingsRead([]place{{"fixture", env}}, handlerReads, bound)
		if err == nil || !strings.Contains(err.Error(), "fixture sets "+unread) {
			t.Errorf("%s: %v, want an error naming %s", name, err, unread)
		}
	}
}
