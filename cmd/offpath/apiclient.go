package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// defaultAPIURL is the dev host of make run.
const defaultAPIURL = "http://127.0.0.1:7071"

// apiFlags are the flags of the commands that use the REST API.
type apiFlags struct {
	url, key, functionKey *string
	asJSON                *bool
	// admin, when set and true, calls as the operator: the key defaults
	// to $OFFPATH_ADMIN_KEY.
	admin *bool
}

func (f apiFlags) isAdmin() bool { return f.admin != nil && *f.admin }

func addAPIFlags(fs *flag.FlagSet) apiFlags {
	return apiFlags{
		url:         fs.String("url", "", "the function app's base URL (default $OFFPATH_URL, else "+defaultAPIURL+")"),
		key:         fs.String("key", "", "the tenant's API key (default $OFFPATH_API_KEY); the admin key for admin commands (default $OFFPATH_ADMIN_KEY)"),
		functionKey: fs.String("function-key", "", "the function key, sent as x-functions-key (default $OFFPATH_FUNCTION_KEY)"),
		asJSON:      fs.Bool("json", false, "print JSON"),
	}
}

// apiClient calls offpath's REST API as a tenant or the operator.
type apiClient struct {
	base, key, functionKey string
	http                   *http.Client
}

// client makes the API client from the flags and the environment.
func (c *cli) client(f apiFlags) (*apiClient, error) {
	base := cmpOr(*f.url, cmpOr(c.getenv("OFFPATH_URL"), defaultAPIURL))
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("-url %q: want http(s)://host[:port]", base)
	}
	keyEnv, keyName := "OFFPATH_API_KEY", "the tenant's API key"
	if f.isAdmin() {
		keyEnv, keyName = "OFFPATH_ADMIN_KEY", "the admin key"
	}
	key := cmpOr(*f.key, c.getenv(keyEnv))
	if key == "" {
		return nil, usagef("missing -key (or %s): %s", keyEnv, keyName)
	}
	return &apiClient{base: strings.TrimRight(base, "/"), key: key,
		functionKey: cmpOr(*f.functionKey, c.getenv("OFFPATH_FUNCTION_KEY")),
		// No overall timeout: results stream as long as they take; each
		// call is bounded by the context.
		http: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: time.Minute}}}, nil
}

// apiFailure is the API's error answer.
type apiFailure struct {
	Method, Path  string
	Status        int
	Code, Message string
}

func (e *apiFailure) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, e.Code, e.Message)
}

// send makes a request and returns the answer if its status is 2xx; any
// other answer becomes an *apiFailure. The caller closes the body.
func (a *apiClient) send(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Accept", "application/json")
	if a.functionKey != "" {
		req.Header.Set("x-functions-key", a.functionKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	f := &apiFailure{Method: method, Path: path, Status: res.StatusCode}
	var eb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
		f.Code, f.Message = eb.Error.Code, eb.Error.Message
	} else {
		f.Code, f.Message = http.StatusText(res.StatusCode), strings.TrimSpace(clipText(string(b)))
	}
	return nil, f
}

// call is send for a JSON answer: the raw body, decoded into out too.
func (a *apiClient) call(ctx context.Context, method, path string, body []byte, out any) (json.RawMessage, error) {
	res, err := a.send(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
		}
	}
	return raw, nil
}

// printRaw prints an API answer as indented JSON.
func (c *cli) printRaw(raw json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := c.out.Write(b.Bytes())
	return err
}

func clipText(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
