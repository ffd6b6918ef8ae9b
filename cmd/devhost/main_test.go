package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestRun_RefusesBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"missing app folder", []string{"-app", t.TempDir() + "/missing"}, "load app"},
		{"empty app folder", []string{"-app", t.TempDir()}, "host.json"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: run(%q) = %v, want an error containing %q", tt.name, tt.args, err, tt.want)
		}
	}
}
