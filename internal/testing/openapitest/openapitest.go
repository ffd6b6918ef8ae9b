// Package openapitest checks HTTP exchanges against offpath's OpenAPI
// document (package api's OpenAPI), so that the document cannot drift from
// the handler: tests put a Validator in front of the handler (Handler) or
// behind their client (Transport), and every exchange under /api/v1/ and
// /api/openai/ is checked with kin-openapi. A test fails on
//
//   - a route the document does not have that answers anything but a 404
//     in the error shape;
//   - a method a documented route does not list that answers anything but
//     a 405 in the error shape (or 204 for OPTIONS) with an Allow header
//     listing exactly the documented methods and OPTIONS;
//   - a status the operation does not document;
//   - a response body, content type or documented header that does not
//     match its schema (offpath's objects refuse undocumented fields);
//   - a success answered to a request the document refuses.
//
// A request the document refuses that the handler refuses too (with a
// documented 4xx) is what hostile-input tests do, and passes.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/offpath/offpath/internal/api"
)

// Prefixes are the paths the document covers; anything else (the host's
// own /admin/ routes, say) is not checked.
var Prefixes = []string{"/api/v1/", "/api/openai/"}

// Validator checks exchanges against the document and reports every
// mismatch to its test.
type Validator struct {
	tb  testing.TB
	doc *openapi3.T
	// behindHost: the exchanges pass through the Functions host, whose
	// own answers the document describes in prose only.
	behindHost bool
}

// BehindHost makes v accept the Functions host's own answers, which come
// before or instead of the app's: 401 with no body (no valid function
// key), and a failed invocation's 5xx, which carries the host's text, not
// the API's error shape. Everything the app answers is checked as before.
func (v *Validator) BehindHost() *Validator {
	v.behindHost = true
	return v
}

var registerOnce sync.Once

// New loads the embedded document (failing tb if it does not load or is
// not valid OpenAPI) and returns a validator reporting to tb.
func New(tb testing.TB) *Validator {
	tb.Helper()
	registerOnce.Do(func() {
		// JSON lines stream and pages are text: the schema says string.
		openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	})
	doc, err := Load()
	if err != nil {
		tb.Fatal(err)
	}
	return &Validator{tb: tb, doc: doc}
}

// Load parses and validates the embedded document.
func Load() (*openapi3.T, error) {
	b, err := api.OpenAPI()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	return doc, nil
}

// Handler wraps h (a test's handler) with a validator reporting to tb.
func Handler(tb testing.TB, h http.Handler) http.Handler { return New(tb).Handler(h) }

// Transport wraps rt (nil: http.DefaultTransport) with a validator
// reporting to tb.
func Transport(tb testing.TB, rt http.RoundTripper) http.RoundTripper {
	return New(tb).Transport(rt)
}

// Client is an http.Client whose exchanges tb's validator checks.
func Client(tb testing.TB) *http.Client { return &http.Client{Transport: Transport(tb, nil)} }

// Handler checks every exchange with h. The response is buffered, checked,
// then sent.
func (v *Validator) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !covered(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		// The request body is kept as the handler reads it, so that a
		// handler that refuses a body unread still reads none of it.
		tee := &capture{max: maxCapture}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, tee), r.Body}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if !tee.over {
			v.Check(r, tee.b.Bytes(), rec.Code, rec.Header(), rec.Body.Bytes())
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

type transport struct {
	v    *Validator
	next http.RoundTripper
}

// Transport checks every exchange that goes through rt.
func (v *Validator) Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return transport{v: v, next: rt}
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !covered(r.URL.Path) {
		return t.next.RoundTrip(r)
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		_ = r.Body.Close()
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := t.next.RoundTrip(r)
	if err != nil {
		return res, err
	}
	got, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("openapitest: read the response: %w", err)
	}
	res.Body = io.NopCloser(bytes.NewReader(got))
	t.v.Check(r, body, res.StatusCode, res.Header, got)
	return res, nil
}

func covered(path string) bool {
	for _, p := range Prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// maxCapture bounds the request body kept for checking; an exchange with
// a larger one is not checked.
const maxCapture = 64 << 20

type capture struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (c *capture) Write(p []byte) (int, error) {
	if c.b.Len()+len(p) > c.max {
		c.over = true
		c.b.Reset()
	}
	if !c.over {
		c.b.Write(p)
	}
	return len(p), nil
}

// Check checks one exchange: the request (with its body) and the answer.
func (v *Validator) Check(r *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	v.tb.Helper()
	for _, problem := range v.Problems(r, reqBody, status, header, body) {
		v.tb.Errorf("openapitest: %s %s → %d: %s", r.Method, clip(r.URL.RequestURI()), status, problem)
	}
}

// Problems returns what in the exchange disagrees with the document.
func (v *Validator) Problems(r *http.Request, reqBody []byte, status int, header http.Header, body []byte) []string {
	if v.behindHost && hostAnswer(status, header, body) {
		return nil
	}
	path, item, params := v.match(r.URL)
	if item == nil {
		if status != http.StatusNotFound {
			return []string{"undocumented route (answered other than 404)"}
		}
		return v.errorShape(r.URL.Path, header, body)
	}
	op := item.GetOperation(r.Method)
	if op == nil {
		return v.undocumentedMethod(r, item, status, header, body)
	}
	ctx := context.Background()
	route := &routers.Route{Spec: v.doc, Path: path, PathItem: item, Method: r.Method, Operation: op}
	req := r.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	var problems []string
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && status < 300 {
		problems = append(problems, fmt.Sprintf("answered %d to a request the document refuses: %v", status, oneLine(err)))
	}
	if op.Responses.Status(status) == nil {
		return append(problems, fmt.Sprintf("undocumented status %d for %s %s", status, r.Method, path))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		problems = append(problems, "response: "+oneLine(err))
	}
	if rd := op.Responses.Status(status); rd != nil && rd.Value != nil && len(rd.Value.Content) == 0 && len(body) > 0 {
		problems = append(problems, fmt.Sprintf("a body (%d bytes) where the document says none", len(body)))
	}
	return problems
}

// hostAnswer says whether an answer is the Functions host's own (see
// BehindHost): no JSON, and 401 with no body or a 5xx.
func hostAnswer(status int, header http.Header, body []byte) bool {
	if strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		return false
	}
	return status == http.StatusUnauthorized && len(body) == 0 || status >= http.StatusInternalServerError
}

// match finds the documented path whose template matches u, segment by
// segment as Go's ServeMux does (a parameter is one non-empty escaped
// segment).
func (v *Validator) match(u *url.URL) (string, *openapi3.PathItem, map[string]string) {
	segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	for path, item := range v.doc.Paths.Map() {
		tmpl := strings.Split(strings.TrimPrefix(path, "/"), "/")
		if len(tmpl) != len(segs) {
			continue
		}
		params := map[string]string{}
		ok := true
		for i, t := range tmpl {
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
				val, err := url.PathUnescape(segs[i])
				if segs[i] == "" || err != nil {
					ok = false
					break
				}
				params[t[1:len(t)-1]] = val
			} else if t != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return path, item, params
		}
	}
	return "", nil, nil
}

func (v *Validator) undocumentedMethod(r *http.Request, item *openapi3.PathItem, status int, header http.Header, body []byte) []string {
	var allow []string
	for m := range item.Operations() {
		allow = append(allow, m)
	}
	sort.Strings(allow)
	allow = append(allow, http.MethodOptions)
	var got []string
	for _, m := range strings.Split(header.Get("Allow"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			got = append(got, m)
		}
	}
	sort.Strings(got)
	want := slices.Clone(allow)
	sort.Strings(want)
	var problems []string
	if !slices.Equal(got, want) {
		problems = append(problems, fmt.Sprintf("Allow %q, the document has %v", header.Get("Allow"), allow))
	}
	switch {
	case r.Method == http.MethodOptions && status == http.StatusNoContent:
		if len(body) > 0 {
			problems = append(problems, "OPTIONS answered with a body")
		}
	case r.Method == http.MethodOptions:
		problems = append(problems, "OPTIONS answered other than 204")
	case status != http.StatusMethodNotAllowed:
		problems = append(problems, "undocumented method (answered other than 405)")
	default:
		problems = append(problems, v.errorShape(r.URL.Path, header, body)...)
	}
	return problems
}

// errorShape checks an answer that no operation documents (404 for no
// route, 405 for no method) against the error schema of its part of the
// API.
func (v *Validator) errorShape(path string, header http.Header, body []byte) []string {
	name := "Error"
	if strings.HasPrefix(path, "/api/openai/") {
		name = "OpenAIError"
	}
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return []string{fmt.Sprintf("content type %q, want application/json (the %s shape)", ct, name)}
	}
	var val any
	if err := json.Unmarshal(body, &val); err != nil {
		return []string{fmt.Sprintf("not JSON: %v", err)}
	}
	if err := v.doc.Components.Schemas[name].Value.VisitJSON(val, openapi3.MultiErrors()); err != nil {
		return []string{fmt.Sprintf("not the %s shape: %s", name, oneLine(err))}
	}
	return nil
}

func oneLine(err error) string {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		parts := make([]string, len(me))
		for i, e := range me {
			parts[i] = oneLine(e)
		}
		return strings.Join(parts, "; ")
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return clip(fmt.Sprintf("%s (at /%s)", se.Reason, strings.Join(se.JSONPointer(), "/")))
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	return clip(s)
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}
