package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun_RefusesBadInput(t *testing.T) {
	t.Parallel()
	app := t.TempDir()
	for path, body := range map[string]string{
		"host.json":          `{"version":"2.0","customHandler":{"description":{"defaultExecutablePath":"handler"}}}`,
		"tick/function.json": `{"bindings":[{"type":"timerTrigger","direction":"in","name":"timer","schedule":"0 0 0 1 1 *"}]}`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(app, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, path), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		env  string // DEVHOST_STORAGE_EXTENSION
		want string
	}{
		{"unknown storage extension", []string{"-app", app, "-storage-extension", "3"}, "", "want 5"},
		{"unknown storage extension setting", []string{"-app", app}, "latest", "DEVHOST_STORAGE_EXTENSION"},
		{"unknown flag", []string{"-nope"}, "", "flag provided but not defined"},
		{"missing app folder", []string{"-app", t.TempDir() + "/missing"}, "", "load app"},
		{"empty app folder", []string{"-app", t.TempDir()}, "", "host.json"},
	}
	for _, tt := range tests {
		getenv := func(k string) string {
			if k == "DEVHOST_STORAGE_EXTENSION" {
				return tt.env
			}
			return ""
		}
		err := run(context.Background(), tt.args, getenv, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: run(%q) = %v, want an error containing %q", tt.name, tt.args, err, tt.want)
		}
	}
}
