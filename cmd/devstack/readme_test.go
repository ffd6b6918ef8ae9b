package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runnableMark, on the line before a shell block of the README, says that
// the block runs as written against make run's stack once .run/env is
// sourced; each prints="…" (or prints='…') names text its output holds.
var (
	runnableMark = regexp.MustCompile(`^<!-- runnable((?:\s+prints=(?:"[^"]*"|'[^']*'))*)\s*-->$`)
	printsAttr   = regexp.MustCompile(`prints=(?:"([^"]*)"|'([^']*)')`)
)

// readmeExample is a runnable block of the README.
type readmeExample struct {
	line   int // of the fence
	script string
	prints []string
}

// runnableExamples reads the README's blocks marked runnable.
func runnableExamples(readme []byte) ([]readmeExample, error) {
	var out []readmeExample
	var cur *readmeExample
	mark := "" // a mark read, waiting for its block
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.script += line + "\n"
		case mark != "":
			if line != "```sh" && line != "```bash" {
				return nil, fmt.Errorf("README.md:%d: a runnable mark is not followed by a sh or bash block", n)
			}
			cur = &readmeExample{line: n}
			m := runnableMark.FindStringSubmatch(mark)
			mark = ""
			for _, p := range printsAttr.FindAllStringSubmatch(m[1], -1) {
				cur.prints = append(cur.prints, p[1]+p[2])
			}
		case strings.HasPrefix(line, "<!-- runnable"):
			if !runnableMark.MatchString(strings.TrimSpace(line)) {
				return nil, fmt.Errorf("README.md:%d: malformed mark %q", n, line)
			}
			mark = strings.TrimSpace(line)
		}
	}
	if cur != nil || mark != "" {
		return nil, fmt.Errorf("README.md: a runnable block does not end")
	}
	return out, sc.Err()
}

// TestREADME_RunnableExamples starts make run's stack, sources its env file
// and runs each of the README's runnable blocks with bash, in order, from
// the repository's root: each must succeed and print what its mark names.
func TestREADME_RunnableExamples(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := runnableExamples(readme)
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < 3 {
		t.Fatalf("%d runnable examples in README.md; want the health, tenants, re-scoring and CLI ones at least", len(examples))
	}
	for _, tool := range []string{"bash", "curl", "jq", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's examples use %s, which is not installed (Debian: apt-get install %s)", tool, tool)
		}
	}
	_, envFile := startStack(t)
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\nsource \"$1\"\n"+ex.script, "readme", envFile)
		cmd.Dir = root
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README.md:%d: %v\n%s\noutput:\n%s", ex.line, err, ex.script, out)
			continue
		}
		for _, p := range ex.prints {
			if !strings.Contains(string(out), p) {
				t.Errorf("README.md:%d: the output does not show %q:\n%s", ex.line, p, out)
			}
		}
		t.Logf("README.md:%d ran:\n%s", ex.line, out)
	}
}
