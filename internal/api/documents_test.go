package api_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
)

// docsEnv is an env with documents: contoso's a.txt done and b.txt
// dead-lettered (its blob in the incoming container), acme's secret.txt
// dead-lettered, and an unattributed rejection.
func docsEnv(t *testing.T) (*env, map[string]string) {
	t.Helper()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.blobs.CreateContainer(ctx, e.incoming, nil); err != nil {
		t.Fatal(err)
	}
	etags := map[string]string{}
	for _, d := range []struct {
		name  string
		state document.State
	}{{"contoso/a.txt", document.Done}, {"contoso/kb/b.txt", document.DeadLettered}, {"acme/secret.txt", document.DeadLettered}} {
		up, err := e.blobs.UploadBuffer(ctx, e.incoming, d.name, []byte("the text of "+d.name), nil)
		if err != nil {
			t.Fatal(err)
		}
		etags[d.name] = strings.Trim(string(*up.ETag), `"`)
		tenantID, _, _ := strings.Cut(d.name, "/")
		st := document.Status{Tenant: tenantID, Name: d.name, ETag: etags[d.name], State: d.state, Alias: "ingest", Queue: "doc-ingest"}
		if d.state == document.DeadLettered {
			st.Reason, st.Deliveries = "chat gpt-4o-mini: HTTP 500", 5
		} else {
			st.Usage = ledger.Usage{PromptTokens: 120, CompletionTokens: 40, CachedTokens: 16, ReasoningTokens: 8, Requests: 2, Refusals: 1, Cost: 1_500}
			st.Calls = document.Calls{Attempts: 5, Throttled: 3, Waited: 2500 * time.Millisecond}
		}
		if _, err := e.docs.Put(ctx, d.name, st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.docs.Put(ctx, "../x.txt", document.Status{Name: "../x.txt", State: document.Rejected, Reason: "invalid blob name"}); err != nil {
		t.Fatal(err)
	}
	return e, etags
}

func names(t *testing.T, res response) []string {
	t.Helper()
	data, ok := res.json["data"].([]any)
	if !ok {
		t.Fatalf("no data in %s", res.body)
	}
	var out []string
	for _, d := range data {
		out = append(out, d.(map[string]any)["name"].(string))
	}
	return out
}

// statusOf is the target of one document's status under base.
func statusOf(base, name string) string {
	return base + "/status?" + url.Values{"name": {name}}.Encode()
}

func TestDocuments_TenantRoutes(t *testing.T) {
	t.Parallel()
	e, _ := docsEnv(t)
	contoso := e.keys["contoso"]

	res := e.do("GET", "/api/v1/documents", contoso, nil)
	e.expect(res, http.StatusOK, "")
	if got := names(t, res); len(got) != 2 || strings.Contains(strings.Join(got, ","), "acme") {
		t.Errorf("contoso's documents = %v, want its two only", got)
	}
	res = e.do("GET", "/api/v1/documents?state=dead_lettered", contoso, nil)
	e.expect(res, http.StatusOK, "")
	if got := names(t, res); len(got) != 1 || got[0] != "contoso/kb/b.txt" {
		t.Errorf("dead-lettered = %v", got)
	}
	if d := res.json["data"].([]any)[0].(map[string]any); d["state"] != "dead_lettered" || d["reason"] != "chat gpt-4o-mini: HTTP 500" {
		t.Errorf("status = %v", d)
	}
	// Pages, one at a time, through next.
	seen := map[string]bool{}
	target := "/api/v1/documents?limit=1"
	var cursor string
	for range 3 {
		res = e.do("GET", target, contoso, nil)
		e.expect(res, http.StatusOK, "")
		for _, n := range names(t, res) {
			seen[n] = true
		}
		next, _ := res.json["next"].(string)
		if next == "" {
			break
		}
		if cursor == "" {
			cursor, _ = res.json["next_cursor"].(string)
		}
		target = next
	}
	if len(seen) != 2 || cursor == "" {
		t.Errorf("paging saw %v (first cursor %q)", seen, cursor)
	}
	// contoso's cursor in acme's hands still shows acme only what is acme's.
	res = e.do("GET", "/api/v1/documents?cursor="+url.QueryEscape(cursor), e.keys["acme"], nil)
	e.expect(res, http.StatusOK, "")
	for _, n := range names(t, res) {
		if !strings.HasPrefix(n, "acme/") {
			t.Errorf("acme, with contoso's cursor, sees %s", n)
		}
	}

	res = e.do("GET", statusOf("/api/v1/documents", "contoso/kb/b.txt"), contoso, nil)
	e.expect(res, http.StatusOK, "")
	if res.json["state"] != "dead_lettered" || res.json["deliveries"] != float64(5) {
		t.Errorf("one status = %s", res.body)
	}
	// The usage is the DocumentUsage schema's, exactly: tokens, model
	// calls and how they went (the validator refuses any other field).
	res = e.do("GET", statusOf("/api/v1/documents", "contoso/a.txt"), contoso, nil)
	e.expect(res, http.StatusOK, "")
	want := map[string]any{"prompt_tokens": 120.0, "completion_tokens": 40.0, "cached_tokens": 16.0, "requests": 2.0,
		"attempts": 5.0, "throttled": 3.0, "waited_ms": 2500.0}
	if !reflect.DeepEqual(res.json["usage"], want) {
		t.Errorf("usage = %v, want %v", res.json["usage"], want)
	}
	// A name's slashes may travel escaped or not.
	e.expect(e.do("GET", "/api/v1/documents/status?name=contoso/kb/b.txt", contoso, nil), http.StatusOK, "")

	for _, c := range []struct {
		target string
		status int
		code   string
	}{
		{"/api/v1/documents?state=lost", 400, "invalid_state"},
		{"/api/v1/documents?state=DONE", 400, "invalid_state"},
		{"/api/v1/documents?state=done%E2%80%8B", 400, "invalid_state"},
		{"/api/v1/documents?tenant=acme", 400, "unknown_parameter"},
		{"/api/v1/documents?limit=0", 400, "invalid_limit"},
		{"/api/v1/documents?limit=-1", 400, "invalid_limit"},
		{"/api/v1/documents?limit=99999", 400, "invalid_limit"},
		{"/api/v1/documents?limit=1e3", 400, "invalid_limit"},
		{"/api/v1/documents?cursor=%21%21", 400, "invalid_cursor"},
		{"/api/v1/documents?cursor=" + strings.Repeat("QUJD", 450), 400, "invalid_cursor"},                           // 1,800 bytes of base64
		{"/api/v1/documents?cursor=" + strings.Repeat("QUJD", 600), 414, "query_too_long"},                           // over 2 KiB
		{"/api/v1/documents?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("a'\nb")), 400, "invalid_cursor"}, // a quote for the filter
		{"/api/v1/documents?state=done&state=queued", 400, "bad_query"},
		{"/api/v1/documents?state=%zz", 400, "bad_query"},
		{"/api/v1/documents?q=" + strings.Repeat("x", 3000), 414, "query_too_long"},
		{statusOf("/api/v1/documents", "acme/secret.txt"), 404, "not_found"}, // another tenant's: as if unknown
		{statusOf("/api/v1/documents", "contoso/nothing.txt"), 404, "not_found"},
		{"/api/v1/documents/status", 400, "invalid_name"},
		{"/api/v1/documents/status?name=", 400, "invalid_name"},
		{"/api/v1/documents/status?name=a&name=b", 400, "bad_query"},
		{statusOf("/api/v1/documents", "contoso/a\x01.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/a\u202e.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/a\u200b.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/\ufeffa.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/a\xff.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/"+strings.Repeat("a", 1100)+".txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/../acme/secret.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/%2e%2e/acme/secret.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/%252e%252e/acme/secret.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/./a.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "/acme/secret.txt"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso"), 400, "invalid_name"},
		{statusOf("/api/v1/documents", "contoso/a.txt") + "&tenant=acme", 400, "unknown_parameter"},
		{statusOf("/api/v1/documents", "contoso/"+strings.Repeat("b", 2100)), 414, "query_too_long"},
	} {
		res := e.do("GET", c.target, contoso, nil)
		if res.status != c.status || field(res.json, "error.code") != c.code {
			t.Errorf("GET %.80s = %d %.300s, want %d %s", c.target, res.status, res.body, c.status, c.code)
		}
		if strings.Contains(string(res.body), "the text of") || strings.Contains(string(res.body), `"etag"`) {
			t.Errorf("GET %.80s shows document text or a status: %.300s", c.target, res.body)
		}
		if len(res.body) > 600 {
			t.Errorf("GET %.80s: the error echoes too much: %d bytes", c.target, len(res.body))
		}
	}
	if strings.Contains(e.logs.String(), "the text of") {
		t.Error("document text in the logs")
	}

	e.expect(e.do("GET", "/api/v1/documents", "", nil), http.StatusUnauthorized, "unauthenticated")
	e.expect(e.do("GET", "/api/v1/documents", "opk_nope", nil), http.StatusUnauthorized, "unauthenticated")
	e.expect(e.do("GET", statusOf("/api/v1/documents", "contoso/a.txt"), "", nil), http.StatusUnauthorized, "unauthenticated")
	e.expect(e.do("GET", "/api/v1/documents", e.admin, nil), http.StatusForbidden, "forbidden")
	e.expect(e.do("GET", statusOf("/api/v1/documents", "contoso/a.txt"), e.admin, nil), http.StatusForbidden, "forbidden")
	e.expect(e.do("POST", "/api/v1/documents", contoso, "{}"), http.StatusMethodNotAllowed, "method_not_allowed")
	e.expect(e.do("DELETE", statusOf("/api/v1/documents", "contoso/a.txt"), contoso, nil), http.StatusMethodNotAllowed, "method_not_allowed")
	// The old path form is no route.
	e.expect(e.do("GET", "/api/v1/documents/contoso/a.txt", contoso, nil), http.StatusNotFound, "not_found")
	// acme's key sees acme's document, never contoso's.
	e.expect(e.do("GET", statusOf("/api/v1/documents", "acme/secret.txt"), e.keys["acme"], nil), http.StatusOK, "")
	e.expect(e.do("GET", statusOf("/api/v1/documents", "contoso/a.txt"), e.keys["acme"], nil), http.StatusNotFound, "not_found")
	res = e.do("GET", "/api/v1/documents?state=done", e.keys["acme"], nil)
	e.expect(res, http.StatusOK, "")
	if got := names(t, res); len(got) != 0 {
		t.Errorf("acme's done documents = %v, want none (contoso's a.txt is done)", got)
	}
}

func TestDocuments_AdminRoutes(t *testing.T) {
	t.Parallel()
	e, _ := docsEnv(t)
	res := e.do("GET", "/api/v1/admin/documents?state=dead_lettered", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	if got := names(t, res); len(got) != 2 {
		t.Errorf("dead-lettered across tenants = %v, want contoso's and acme's", got)
	}
	res = e.do("GET", "/api/v1/admin/documents?tenant=acme", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	if got := names(t, res); len(got) != 1 || got[0] != "acme/secret.txt" {
		t.Errorf("acme's = %v", got)
	}
	res = e.do("GET", "/api/v1/admin/documents?tenant=_unattributed&state=rejected", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	if got := names(t, res); len(got) != 1 {
		t.Errorf("unattributed = %v", got)
	}
	e.expect(e.do("GET", statusOf("/api/v1/admin/documents", "acme/secret.txt"), e.admin, nil), http.StatusOK, "")
	e.expect(e.do("GET", statusOf("/api/v1/admin/documents", "acme/none.txt"), e.admin, nil), http.StatusNotFound, "not_found")
	res = e.do("GET", statusOf("/api/v1/admin/documents", "../x.txt")+"&tenant=_unattributed", e.admin, nil)
	e.expect(res, http.StatusBadRequest, "invalid_name") // a hostile name is listed, never looked up
	e.expect(e.do("GET", statusOf("/api/v1/admin/documents", "acme/secret.txt")+"&tenant=x%27%20or%20%271", e.admin, nil), http.StatusBadRequest, "invalid_tenant")
	e.expect(e.do("GET", "/api/v1/admin/documents/status", e.admin, nil), http.StatusBadRequest, "invalid_name")
	e.expect(e.do("GET", "/api/v1/admin/documents?cursor="+strings.Repeat("QUJD", 450), e.admin, nil), http.StatusBadRequest, "invalid_cursor")
	e.expect(e.do("GET", "/api/v1/admin/documents?limit=501", e.admin, nil), http.StatusBadRequest, "invalid_limit")
	e.expect(e.do("GET", "/api/v1/admin/documents?tenant=Not%20a%20tenant", e.admin, nil), http.StatusBadRequest, "invalid_tenant")
	e.expect(e.do("GET", "/api/v1/admin/documents?state=gone", e.admin, nil), http.StatusBadRequest, "invalid_state")
	e.expect(e.do("GET", "/api/v1/admin/documents?owner=x", e.admin, nil), http.StatusBadRequest, "unknown_parameter")
	for _, key := range []string{e.keys["contoso"], e.keys["acme"]} {
		e.expect(e.do("GET", "/api/v1/admin/documents", key, nil), http.StatusForbidden, "forbidden")
		e.expect(e.do("GET", statusOf("/api/v1/admin/documents", "acme/secret.txt"), key, nil), http.StatusForbidden, "forbidden")
	}
	e.expect(e.do("GET", "/api/v1/admin/documents", "", nil), http.StatusUnauthorized, "unauthenticated")
	e.expect(e.do("GET", "/api/v1/admin/documents", "opa_nope", nil), http.StatusUnauthorized, "unauthenticated")
}

func TestDocuments_Reprocess(t *testing.T) {
	t.Parallel()
	e, etags := docsEnv(t)
	const path = "/api/v1/admin/documents/reprocess"
	for _, c := range []struct {
		cred   string
		body   any
		status int
		code   string
	}{
		{e.keys["contoso"], map[string]string{"name": "contoso/kb/b.txt"}, 403, "forbidden"}, // tenants may not
		{"", map[string]string{"name": "contoso/kb/b.txt"}, 401, "unauthenticated"},
		{e.admin, `{"name":`, 400, "invalid_json"},
		{e.admin, `{"name":"contoso/kb/b.txt"} {}`, 400, "invalid_json"},
		{e.admin, `{"name":"contoso/kb/b.txt","force":true}`, 400, "unknown_field"},
		{e.admin, `{}`, 400, "invalid_name"},
		{e.admin, nil, 400, "invalid_json"},
		{e.admin, map[string]string{"name": "contoso/../acme/secret.txt"}, 400, "invalid_name"},
		{e.admin, map[string]string{"name": "contoso/a\x00.txt"}, 400, "invalid_name"},
		{e.admin, map[string]string{"name": "contoso/kb/b\u202e.txt"}, 400, "invalid_name"},
		{e.admin, map[string]string{"name": "contoso/kb/\ufeffb.txt"}, 400, "invalid_name"},
		{e.admin, map[string]string{"name": "contoso/%2e%2e/acme/secret.txt"}, 400, "invalid_name"},
		{e.admin, map[string]string{"name": "/acme/secret.txt"}, 400, "invalid_name"},
		{e.admin, `{"name":5}`, 400, "invalid_json"},
		{e.admin, `["contoso/kb/b.txt"]`, 400, "invalid_json"},
		{e.admin, map[string]string{"name": "contoso/" + strings.Repeat("é", 600)}, 400, "invalid_name"},
		{e.admin, map[string]string{"name": "contoso/kb/b.txt", "tenant": "acme"}, 400, "invalid_tenant"},
		{e.admin, map[string]string{"name": "acme/secret.txt", "tenant": "contoso"}, 400, "invalid_tenant"},
		{e.admin, `{"name":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "body_too_large"},
		{e.admin, map[string]string{"name": "contoso/none.txt"}, 404, "not_found"},
		{e.admin, map[string]string{"name": "contoso/a.txt"}, 409, "not_dead_lettered"},
	} {
		res := e.do("POST", path, c.cred, c.body)
		if res.status != c.status || field(res.json, "error.code") != c.code {
			t.Errorf("POST %.60v = %d %.200s, want %d %s", c.body, res.status, res.body, c.status, c.code)
		}
	}

	res := e.do("POST", path, e.admin, map[string]string{"tenant": "contoso", "name": "contoso/kb/b.txt"})
	e.expect(res, http.StatusAccepted, "")
	etag, _ := res.json["etag"].(string)
	if res.json["state"] != "queued" || etag == "" || etag == etags["contoso/kb/b.txt"] || res.header.Get("Location") != statusOf("/api/v1/admin/documents", "contoso/kb/b.txt") {
		t.Fatalf("reprocess = %s (Location %q), want queued at a new version", res.body, res.header.Get("Location"))
	}
	// The blob is the new version, the same bytes; the status says queued.
	props, err := e.blobs.ServiceClient().NewContainerClient(e.incoming).NewBlobClient("contoso/kb/b.txt").GetProperties(context.Background(), nil)
	if err != nil || strings.Trim(string(*props.ETag), `"`) != etag || *props.ContentLength != int64(len("the text of contoso/kb/b.txt")) {
		t.Errorf("blob after reprocess: %v", err)
	}
	res = e.do("GET", res.header.Get("Location"), e.admin, nil)
	if res.json["state"] != "queued" || res.json["etag"] != etag {
		t.Errorf("the Location after reprocess = %s", res.body)
	}
	res = e.do("GET", statusOf("/api/v1/documents", "contoso/kb/b.txt"), e.keys["contoso"], nil)
	if res.json["state"] != "queued" {
		t.Errorf("status after reprocess = %s", res.body)
	}
	e.expect(e.do("POST", path, e.admin, map[string]string{"name": "contoso/kb/b.txt"}), http.StatusConflict, "not_dead_lettered")

	// A dead-lettered version replaced since: nothing to reprocess.
	if _, err := e.blobs.UploadBuffer(context.Background(), e.incoming, "acme/secret.txt", []byte("v2"), nil); err != nil {
		t.Fatal(err)
	}
	e.expect(e.do("POST", path, e.admin, map[string]string{"name": "acme/secret.txt"}), http.StatusConflict, "document_changed")
	e.expect(e.do("GET", path, e.admin, nil), http.StatusMethodNotAllowed, "")
}
