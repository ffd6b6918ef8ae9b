package deps_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/offpath/offpath/"

// adapters are the packages that talk to an external system through its
// SDK: one per system. Only they, the wiring (cmd/..., internal/config), the
// local stand-ins (internal/local/...) and test support (internal/testing/...)
// may depend on an SDK.
var adapters = []string{
	"internal/azopenai",     // Azure OpenAI
	"internal/blobstore",    // Blob Storage
	"internal/tablestore",   // Table Storage
	"internal/monitor",      // Azure Monitor (metrics queries)
	"internal/tokenmetrics", // Application Insights ingestion
}

// notFlows are the internal packages the rule does not cover.
var notFlows = []string{"internal/config", "internal/local/", "internal/testing/"}

// forbidden names what dep is to the rule: "sdk" for an Azure SDK or
// openai-go package, an adapter's path, or "" when a flow may use it.
func forbidden(dep string) string {
	switch {
	case strings.HasPrefix(dep, "github.com/Azure/"), strings.HasPrefix(dep, "github.com/openai/openai-go"):
		return "sdk"
	case strings.HasPrefix(dep, module):
		if p := strings.TrimPrefix(dep, module); slices.Contains(adapters, p) {
			return p
		}
	}
	return ""
}

// TestFlowsAreFreeOfSDKsAndAdapters: every internal package that is not an
// adapter, the wiring, a local stand-in or test support is the domain or a
// flow, and depends (directly or not, test files aside) on no Azure SDK
// package, no openai-go package and no adapter: adapters import flows,
// never the reverse, and the wiring joins them.
func TestFlowsAreFreeOfSDKsAndAdapters(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", module+"internal/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	flows := 0
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		path := strings.TrimPrefix(p.ImportPath, module)
		if slices.Contains(adapters, path) || slices.ContainsFunc(notFlows, func(n string) bool {
			return path == n || strings.HasSuffix(n, "/") && strings.HasPrefix(path, n)
		}) {
			continue
		}
		flows++
		reached := map[string]bool{} // kinds reported
		for _, d := range p.Deps {
			if k := forbidden(d); k != "" && !reached[k] {
				reached[k] = true
				t.Errorf("%s depends on %s: a flow may not depend on an SDK or an adapter (define the type it needs in the flow or the domain, and let the adapter import it)", path, d)
			}
		}
	}
	if flows < 20 {
		t.Errorf("only %d flow packages listed; is go list looking at the right module?", flows)
	}
}
