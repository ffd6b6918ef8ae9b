package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// TestDocuments_ThroughTheAPI drives offpath documents against the whole
// app behind the dev host, with no storage credential: a tenant reads its
// own statuses, the operator (-admin) every tenant's, and reprocess puts a
// dead-lettered document back on the queue path through the admin route.
func TestDocuments_ThroughTheAPI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	s := apptest.Start(t, apptest.Config{})
	ctx := context.Background()
	base := map[string]string{"OFFPATH_URL": s.URL, "OFFPATH_FUNCTION_KEY": apptest.FunctionKey}
	with := func(k, v string) map[string]string {
		env := map[string]string{k: v}
		for k, v := range base {
			env[k] = v
		}
		return env
	}
	contoso, fabrikam, admin := with("OFFPATH_API_KEY", s.Keys["contoso"]), with("OFFPATH_API_KEY", s.Keys["fabrikam"]), with("OFFPATH_ADMIN_KEY", s.AdminKey)

	// contoso may not use the ingestion alias: its document is rejected,
	// then recorded dead-lettered as a failing last delivery would.
	const name = "contoso/kb/a.md"
	etag := s.DeadLetter(name, []byte("# Returns\n\nWithin 30 days."), "chat gpt-4o-mini: HTTP 500").ETag

	if out := mustRun(t, contoso, "documents", "status", name); !strings.Contains(out, "dead_lettered") || !strings.Contains(out, "HTTP 500") || !strings.Contains(out, etag) {
		t.Errorf("documents status:\n%s", out)
	}
	var one document.Status
	if out := mustRun(t, contoso, "documents", "status", name, "-json"); json.Unmarshal([]byte(out), &one) != nil || one.State != document.DeadLettered || one.Deliveries != 5 {
		t.Errorf("documents status -json:\n%s", out)
	}
	var page struct {
		Data []document.Status `json:"data"`
	}
	if out := mustRun(t, contoso, "documents", "list", "-json"); json.Unmarshal([]byte(out), &page) != nil || len(page.Data) != 1 || page.Data[0].Name != name {
		t.Errorf("contoso's documents list -json:\n%s", out)
	}
	// Another tenant sees nothing of it.
	if out := mustRun(t, fabrikam, "documents", "list"); strings.Contains(out, name) || !strings.Contains(out, "no documents") {
		t.Errorf("fabrikam's documents list:\n%s", out)
	}
	if _, errOut, code := invoke(t, fabrikam, "documents", "status", name); code != 1 || !strings.Contains(errOut, "404 not_found") {
		t.Errorf("fabrikam reads contoso's document: exit %d, %s", code, errOut)
	}
	if out := mustRun(t, admin, "documents", "list", "-admin", "-state", "dead_lettered"); !strings.Contains(out, name) || !strings.Contains(out, "HTTP 500") {
		t.Errorf("documents list -admin -state dead_lettered:\n%s", out)
	}
	if out := mustRun(t, fabrikam, "documents", "list", "-state", "refused"); !strings.Contains(out, "no refused documents") {
		t.Errorf("an empty list with -state:\n%s", out)
	}
	if out := mustRun(t, admin, "documents", "list", "-admin", "-tenant", "fabrikam"); strings.Contains(out, name) {
		t.Errorf("documents list -admin -tenant fabrikam:\n%s", out)
	}

	// A tenant's key may not reprocess; the admin's may, once.
	if _, errOut, code := invoke(t, base, "documents", "reprocess", name, "-key", s.Keys["contoso"]); code != 1 || !strings.Contains(errOut, "403 forbidden") {
		t.Errorf("reprocess with a tenant's key: exit %d, %s", code, errOut)
	}
	var queued document.Status
	if out := mustRun(t, admin, "documents", "reprocess", name, "-json"); json.Unmarshal([]byte(out), &queued) != nil || queued.State != document.Queued || queued.SameVersion(etag) {
		t.Errorf("documents reprocess -json:\n%s", out)
	}
	if _, errOut, code := invoke(t, admin, "documents", "reprocess", name); code != 1 || !strings.Contains(errOut, "409 not_dead_lettered") {
		t.Errorf("a second reprocess: exit %d, %s", code, errOut)
	}
	props, err := s.Blobs.ServiceClient().NewContainerClient("incoming").NewBlobClient(name).GetProperties(ctx, nil)
	if err != nil || strings.Trim(string(*props.ETag), `"`) != queued.ETag {
		t.Errorf("the blob after reprocess: %v, want version %s", err, queued.ETag)
	}

	// Usage errors exit 2, before any request; help exits 0.
	for _, args := range [][]string{
		{"documents", "status"},
		{"documents", "status", "no-tenant.txt"},
		{"documents", "status", name, "-tenant", "_unattributed"}, // -tenant without -admin
		{"documents", "list", "-state", "lost"},
		{"documents", "list", "-limit", "0"},
		{"documents", "list", "-limit", "501"},
		{"documents", "list", "contoso"},
		{"documents", "list", "-admin", "-tenant", "Not A Tenant"},
		{"documents", "reprocess"},
		{"documents", "reprocess", name, "extra"},
		{"documents", "shred"},
	} {
		if _, errOut, code := invoke(t, admin, args...); code != 2 || errOut == "" {
			t.Errorf("offpath %s: exit %d, stderr %q; want 2 and a message", strings.Join(args, " "), code, errOut)
		}
	}
	if _, errOut, code := invoke(t, base, "documents", "reprocess", name); code != 2 || !strings.Contains(errOut, "OFFPATH_ADMIN_KEY") {
		t.Errorf("reprocess without the admin key: exit %d, %s", code, errOut)
	}
	if _, errOut, code := invoke(t, base, "documents", "list"); code != 2 || !strings.Contains(errOut, "OFFPATH_API_KEY") {
		t.Errorf("list without a key: exit %d, %s", code, errOut)
	}
	for _, args := range [][]string{{"documents", "-h"}, {"documents", "list", "-h"}, {"documents", "reprocess", "--help"}} {
		if out, _, code := invoke(t, base, args...); code != 0 || !strings.Contains(out, "documents") {
			t.Errorf("offpath %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	if _, errOut, code := invoke(t, with("OFFPATH_ADMIN_KEY", "opa_nope"), "documents", "list", "-admin"); code != 1 || !strings.Contains(errOut, "401") {
		t.Errorf("a wrong admin key: exit %d, %s", code, errOut)
	}
}
