package aoaisim_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/openai/openai-go/v3/option"
)

// quotaSim has one batch deployment whose quota fits one job of content
// but not two.
func quotaSim(t *testing.T, behaviour string, content string) (*sim, int64, int64) {
	t.Helper()
	est := aoaisim.EnqueuedTokens(int64(len(content)))
	quota := est + est/2
	deps := []aoaisim.Deployment{{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
		EnqueuedTokenQuota: quota, QuotaBehaviour: behaviour}}
	return newSim(t, aoaisim.Config{Deployments: deps}), est, quota
}

func enqueued(s *sim) int64 { return s.srv.Stats().Deployments[0].EnqueuedTokens }

func TestQuota_FailFast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	content := joinLines(chatLines(10, batchDep))
	s, est, quota := quotaSim(t, aoaisim.QuotaFailFast, content)
	fileID := upload(t, s.classic, content, 0)

	var raw *http.Response
	a, err := createBatch(ctx, s.classic, fileID, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("first create: %v", err)
	}
	if raw.Header.Get("deployment-enqueued-tokens") != strconv.FormatInt(est, 10) ||
		raw.Header.Get("deployment-maximum-enqueued-tokens") != strconv.FormatInt(quota, 10) || enqueued(s) != est {
		t.Errorf("headers %v, enqueued %d; want %d of %d", raw.Header, enqueued(s), est, quota)
	}
	_, err = createBatch(ctx, s.classic, fileID)
	e := apiError(t, err)
	if e.StatusCode != 400 || e.Code != "token_limit_exceeded" || !strings.Contains(e.Message, "token_limit_exceeded") {
		t.Fatalf("second create = %d %q %q, want 400 token_limit_exceeded", e.StatusCode, e.Code, e.Message)
	}
	if got := len(s.srv.State().Batches); got != 1 {
		t.Errorf("refused create left %d batches, want 1", got)
	}

	s.clock.Advance(time.Hour)
	waitStatus(t, s.classic, a.ID, "completed")
	if enqueued(s) != 0 {
		t.Fatalf("enqueued after completion = %d, want 0", enqueued(s))
	}

	// Tokens come back on every terminal state: failed and cancelled too.
	bad := upload(t, s.classic, joinLines([]string{chatLine("x", batchDep, "/v1/chat/completions", "a"), chatLine("x", batchDep, "/v1/chat/completions", "b")}), 0)
	f, err := createBatch(ctx, s.classic, bad)
	if err != nil || enqueued(s) == 0 {
		t.Fatalf("create of an invalid file: %v (enqueued %d)", err, enqueued(s))
	}
	s.clock.Advance(2 * time.Minute)
	waitStatus(t, s.classic, f.ID, "failed")
	if enqueued(s) != 0 {
		t.Errorf("enqueued after failure = %d, want 0", enqueued(s))
	}
	c, err := createBatch(ctx, s.classic, fileID)
	if err != nil {
		t.Fatalf("create after release: %v", err)
	}
	if _, err := s.classic.Batches.Cancel(ctx, c.ID); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	s.clock.Advance(time.Minute)
	waitStatus(t, s.classic, c.ID, "cancelled")
	if enqueued(s) != 0 {
		t.Errorf("enqueued after cancel = %d, want 0", enqueued(s))
	}
}

func TestQuota_FailAtValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	content := joinLines(chatLines(10, batchDep))
	s, est, _ := quotaSim(t, aoaisim.QuotaFailAtValidation, content)
	fileID := upload(t, s.v1, content, 0)
	a, err := createBatch(ctx, s.v1, fileID)
	if err != nil {
		t.Fatalf("first create: %v", err)
	}
	b, err := createBatch(ctx, s.v1, fileID)
	if err != nil {
		t.Fatalf("second create must be accepted in this mode: %v", err)
	}
	s.clock.Advance(2 * time.Minute)
	waitStatus(t, s.v1, a.ID, "in_progress")
	b = waitStatus(t, s.v1, b.ID, "failed")
	if len(b.Errors.Data) != 1 {
		t.Fatalf("errors.data = %+v", b.Errors.Data)
	}
	d := b.Errors.Data[0]
	if d.Code != "token_limit_exceeded" || d.JSON.Line.Raw() != "null" || d.JSON.Param.Raw() != "null" {
		t.Errorf("errors.data[0] = %s, want token_limit_exceeded with null line and param", d.RawJSON())
	}
	if enqueued(s) != est {
		t.Errorf("enqueued = %d, want only the running job's %d", enqueued(s), est)
	}
	s.clock.Advance(time.Hour)
	waitStatus(t, s.v1, a.ID, "completed")
	if enqueued(s) != 0 {
		t.Fatalf("enqueued after completion = %d", enqueued(s))
	}
	c, err := createBatch(ctx, s.v1, fileID)
	if err != nil {
		t.Fatalf("third create: %v", err)
	}
	s.clock.Advance(2 * time.Minute)
	waitStatus(t, s.v1, c.ID, "in_progress")
}
