package infracheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// kedaModule is KEDA's Go module: its source carries the CRDs
// (config/crd/bases), Apache-2.0 like the rest of KEDA.
const kedaModule = "github.com/kedacore/keda/v2"

// kedaVersions are the KEDA releases the manifests must validate against:
// the oldest and the newest the AKS add-on installs on the Kubernetes lines
// AKS supports (the add-on's version follows the cluster's; `kubectl get crd
// scaledobjects.keda.sh -o yaml` shows a cluster's). Each is pinned by the
// module's hash (go.sum's h1: form), checked after the download, so that a
// proxy cannot hand over other CRDs. To move the range: `go mod download
// -json github.com/kedacore/keda/v2@vX.Y.Z` prints the Sum to put here.
var kedaVersions = []struct{ version, sum string }{
	{"v2.17.3", "h1:OlGqI/Ih1kUcz0gJ9B5nxOZU+j5GXQzc2ELByHs7cYA="},
	{"v2.19.0", "h1:IP3iMTwr9HkaAwPtLnhngPv74LghMf7ubLrsGLQo52M="},
}

// kedaCRDs holds the CRD folders of kedaVersions, fetched once per test
// binary: the go command downloads the module through the module proxy
// into the module cache (GOMODCACHE), or finds it there offline.
var kedaCRDs = sync.OnceValues(func() (map[string]string, error) {
	// A temporary directory outside the repository: the download must not
	// touch go.mod or go.sum (KEDA is data for the tests, not a dependency).
	dir, err := os.MkdirTemp("", "offpath-keda-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go") // no go on PATH: try GOROOT
	}
	dirs := map[string]string{}
	for _, v := range kedaVersions {
		cmd := exec.Command(goCmd, "mod", "download", "-json", kedaModule+"@"+v.version)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var mod struct {
			Dir, Sum, Error string
		}
		if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Error != "" {
			return nil, fmt.Errorf("go mod download %s@%s (through the module proxy, or the module cache offline): %v %s %s",
				kedaModule, v.version, err, mod.Error, bytes.TrimSpace(stderr.Bytes()))
		}
		if mod.Sum != v.sum {
			return nil, fmt.Errorf("%s@%s: module hash %s, want the pinned %s", kedaModule, v.version, mod.Sum, v.sum)
		}
		crds := filepath.Join(mod.Dir, "config", "crd", "bases")
		if _, err := os.Stat(filepath.Join(mod.Dir, "LICENSE")); err != nil {
			return nil, fmt.Errorf("%s@%s: no LICENSE beside the CRDs: %w", kedaModule, v.version, err)
		}
		dirs[v.version] = crds
	}
	return dirs, nil
})

// kedaValidators returns a validator per pinned KEDA version; a test fails
// (never skips) when the CRDs cannot be had.
func kedaValidators(t *testing.T) map[string]kedaValidator {
	t.Helper()
	dirs, err := kedaCRDs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kedaValidator{}
	for version, dir := range dirs {
		kv, err := newKEDAValidator(dir)
		if err != nil {
			t.Fatalf("KEDA %s: %v", version, err)
		}
		out[version] = kv
	}
	return out
}
