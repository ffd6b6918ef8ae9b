package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// startupWait bounds how long a call retries while the handler starts or
// restarts.
const startupWait = 20 * time.Second

// Call sends a request to the app through the dev host as tenant (its API
// key as the bearer; an unknown tenant sends none) and returns the response,
// whose body the caller reads, streaming, and closes. body is sent as is if
// it is []byte, as JSON otherwise; nil sends none. While the handler starts
// or restarts, Call retries refused connections, and 5xx answers to
// requests without a body.
func (s *Stack) Call(method, path, tenant string, body any) *http.Response {
	s.tb.Helper()
	return s.call(method, path, s.Keys[tenant], body)
}

// Do is Call that reads the whole answer into out and returns the status:
// out may be nil (discard), a *[]byte (the raw body) or a pointer to decode
// JSON into.
func (s *Stack) Do(method, path, tenant string, body, out any) int {
	s.tb.Helper()
	return s.read(s.call(method, path, s.Keys[tenant], body), method, path, out)
}

// DoAdmin is Do with the admin key.
func (s *Stack) DoAdmin(method, path string, body, out any) int {
	s.tb.Helper()
	return s.read(s.call(method, path, s.AdminKey, body), method, path, out)
}

func (s *Stack) read(res *http.Response, method, path string, out any) int {
	s.tb.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		s.tb.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	switch p := out.(type) {
	case nil:
	case *[]byte:
		*p = b
	default:
		if err := json.Unmarshal(b, out); err != nil {
			s.tb.Fatalf("%s %s: %d %s: %v", method, path, res.StatusCode, b, err)
		}
	}
	return res.StatusCode
}

func (s *Stack) call(method, path, bearer string, body any) *http.Response {
	s.tb.Helper()
	var payload []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		payload = b
	default:
		var err error
		if payload, err = json.Marshal(body); err != nil {
			s.tb.Fatalf("%s %s: encode the body: %v", method, path, err)
		}
	}
	deadline := time.Now().Add(startupWait)
	for {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(payload)
		}
		req, err := http.NewRequest(method, s.URL+path, rd)
		if err != nil {
			s.tb.Fatalf("%s %s: %v", method, path, err)
		}
		req.Header.Set("x-functions-key", FunctionKey)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			if time.Now().After(deadline) {
				s.tb.Fatalf("%s %s: %v", method, path, err)
			}
			time.Sleep(100 * time.Millisecond) // the handler is starting
			continue
		}
		if res.StatusCode >= 500 && body == nil && time.Now().Before(deadline) { // the handler is restarting
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return res
	}
}

// Fire runs the non-HTTP function name now, through the dev host's
// POST /admin/functions/{name} with the master key, as an operator would
// with the real host. Like the host, the dev host answers at once and runs
// the function in the background: Fire does not wait for it to finish.
func (s *Stack) Fire(name string) {
	s.tb.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/admin/functions/"+name, bytes.NewReader([]byte(`{}`)))
	if err != nil {
		s.tb.Fatal(err)
	}
	req.Header.Set("x-functions-key", MasterKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.tb.Fatalf("fire %s: %v", name, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		s.tb.Fatalf("fire %s: %d %s, want 202", name, res.StatusCode, b)
	}
}

// FireAndWait runs the non-HTTP function name once now through the dev
// host, as Fire does, and returns when that invocation has finished (a
// timer's invocations run one at a time, so it waits for one already
// running first). After it returns, whatever the invocation did (rows,
// blobs, alerts, messages sent) is done: a test may assert that nothing
// more happened.
func (s *Stack) FireAndWait(name string) {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	if err := s.Host.Fire(ctx, name, ""); err != nil {
		s.tb.Fatalf("fire %s: %v", name, err)
	}
}

// KillHandler kills the handler process of this stack (SIGKILL, no
// shutdown), as a crash would; the dev host restarts it.
func (s *Stack) KillHandler() error {
	pid := s.Host.HandlerPID()
	if pid == 0 {
		return fmt.Errorf("no handler runs %s", s.handler)
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("find the handler: %w", err)
	}
	return proc.Kill()
}
