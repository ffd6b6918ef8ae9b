package infracheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Paths relative to this package's directory (go test runs tests there).
const (
	repoRoot  = "../../.."
	infraDir  = repoRoot + "/infra"
	k8sDir    = infraDir + "/k8s"
	funcsDir  = repoRoot + "/functions"
	hostJSON  = repoRoot + "/host.json"
	bicepMain = infraDir + "/main.bicep"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// placeholder matches the ${NAME} placeholders azd substitutes in manifests
// (drone/envsubst syntax; offpath uses only the plain form).
var placeholder = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// fakeEnv gives every placeholder a value of the right shape, so that the
// rendered manifests are what azd would apply.
func fakeEnv(name string) (string, bool) {
	values := map[string]string{
		"OFFPATH_WORKER_NAMESPACE":              "offpath",
		"OFFPATH_APP_CLIENT_ID":                 "00000000-0000-0000-0000-00000000a001",
		"OFFPATH_KEDA_CLIENT_ID":                "00000000-0000-0000-0000-00000000a002",
		"OFFPATH_BLOB_SERVICE_URI":              "https://stoffpathtest.blob.core.windows.net",
		"OFFPATH_QUEUE_SERVICE_URI":             "https://stoffpathtest.queue.core.windows.net",
		"OFFPATH_TABLE_SERVICE_URI":             "https://stoffpathtest.table.core.windows.net",
		"OFFPATH_SERVICEBUS_NAMESPACE":          "sb-offpath-test",
		"OFFPATH_SERVICEBUS_FQDN":               "sb-offpath-test.servicebus.windows.net",
		"OFFPATH_AOAI_ENDPOINT":                 "https://oai-offpath-test.openai.azure.com",
		"OFFPATH_AOAI_LIMITS":                   `{"gpt-4o-mini":{"rpm":3000,"tpm":500000}}`,
		"APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://example.invalid/",
		"SERVICE_INGEST_HEAVY_IMAGE_NAME":       "croffpathtest.azurecr.io/offpath/ingest-heavy-offpath:azd-deploy-1",
	}
	v, ok := values[name]
	return v, ok
}

// render substitutes placeholders like azd does; an unknown name or a
// dollar sign that is not a placeholder is an error (envsubst would
// substitute or choke on it).
func render(text []byte, env func(string) (string, bool)) ([]byte, error) {
	var errs []error
	out := placeholder.ReplaceAllFunc(text, func(m []byte) []byte {
		name := string(placeholder.FindSubmatch(m)[1])
		v, ok := env(name)
		if !ok {
			errs = append(errs, fmt.Errorf("unknown placeholder ${%s}", name))
		}
		return []byte(v)
	})
	if i := bytes.IndexByte(placeholder.ReplaceAll(text, nil), '$'); i >= 0 {
		errs = append(errs, fmt.Errorf("a $ that is not a ${NAME} placeholder at byte %d: azd's envsubst would substitute it", i))
	}
	return out, errors.Join(errs...)
}

// document is one YAML document of a manifest file.
type document struct {
	file string
	raw  []byte
	kind string
	api  string
	name string
}

// splitDocuments splits rendered multi-document YAML and reads each
// document's apiVersion, kind and name.
func splitDocuments(file string, text []byte) ([]document, error) {
	var docs []document
	for _, part := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(text), -1) {
		if strings.TrimSpace(stripComments(part)) == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(part), &head); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if head.Kind == "" || head.APIVersion == "" {
			return nil, fmt.Errorf("%s: a document without apiVersion and kind", file)
		}
		docs = append(docs, document{file: file, raw: []byte(part), kind: head.Kind, api: head.APIVersion, name: head.Metadata.Name})
	}
	return docs, nil
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// loadManifests renders and splits every .yaml/.yml file under dir
// (recursively, as azd applies them).
func loadManifests(t *testing.T, dir string) []document {
	t.Helper()
	var docs []document
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rendered, err := render(data, fakeEnv)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		ds, err := splitDocuments(filepath.Base(path), rendered)
		docs = append(docs, ds...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatalf("no manifests under %s", dir)
	}
	return docs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
