package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

// syncBuffer is a bytes.Buffer safe for the test and run's goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	args := []string{"-config", "deployments.example.json", "-speed", "0", "-keys", "k1,k2",
		"-fault", "deployment=gpt-4o-mini,route=embeddings,error_rate=1", "-log-level", "warn"}
	go func() { done <- run(ctx, args, &stdout, &stderr) }()

	urlRE := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	var url string
	if !poll.Within(10*time.Second, func() bool {
		if m := urlRE.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
		return url != ""
	}) {
		t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
	}
	for _, dep := range []string{"gpt-4o-mini ", "text-embedding-3-small", "gpt-4o-mini-batch"} {
		if !strings.Contains(stdout.String(), dep) {
			t.Errorf("banner does not list %s:\n%s", dep, stdout.String())
		}
	}
	client := openai.NewClient(azure.WithEndpoint(url, "2024-10-21"), azure.WithAPIKey("k2"),
		azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
	cc, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	if err != nil || cc.Usage.PromptTokens != int64(aoaisim.PromptTokens([]string{"hello"}, 0)) {
		t.Fatalf("chat through the program: %+v, %v", cc, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
}

func TestRun_BadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"unknown flag", []string{"-nope"}},
		{"bad deployment", []string{"-deployment", "name=x,tpm=lots"}},
		{"bad fault", []string{"-fault", "error_rate=3"}},
		{"missing config", []string{"-config", "does-not-exist.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			if err := run(context.Background(), tt.args, &out, &out); err == nil {
				t.Errorf("run(%v) = nil, want an error", tt.args)
			}
		})
	}
}
