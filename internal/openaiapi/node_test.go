package openaiapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/offpath/offpath/internal/testing/apptest"
)

// TestNodeOpenAI runs testdata/door.mjs, the official Node openai package
// (pinned in package.json, installed by make deps) with its OpenAI and
// AzureOpenAI clients, against the app behind the dev host, then checks
// the usage it summed from the output against the ledger.
func TestNodeOpenAI(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed (Node.js 20, as for Azurite)")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "node_modules", "openai", "package.json")); err != nil {
		t.Fatal("the openai npm package is not installed: run make deps")
	}
	s := fastStack(t)
	cmd := exec.CommandContext(t.Context(), node, filepath.Join("testdata", "door.mjs"))
	cmd.Env = append(os.Environ(), "DOOR_URL="+s.URL, "DOOR_FUNCTION_KEY="+apptest.FunctionKey,
		"DOOR_KEY="+s.Keys["contoso"], "DOOR_OTHER_KEY="+s.Keys["fabrikam"], "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("door.mjs: %v\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	var sum struct {
		Batch            string `json:"batch"`
		Lines            int    `json:"lines"`
		PromptTokens     int64  `json:"prompt_tokens"`
		CompletionTokens int64  `json:"completion_tokens"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &sum); err != nil {
		t.Fatalf("door.mjs printed %q: %v", stdout.Bytes(), err)
	}
	if rows, p, c := jobLedger(t, s, "contoso", sum.Batch); sum.Lines != 1000 || rows != 1 || p != sum.PromptTokens || c != sum.CompletionTokens {
		t.Errorf("node saw %+v; the ledger has %d rows with %d/%d tokens", sum, rows, p, c)
	}
}
