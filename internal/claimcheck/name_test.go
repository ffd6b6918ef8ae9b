package claimcheck_test

import (
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/outcome"
)

func TestRules_ParseName(t *testing.T) {
	t.Parallel()
	r := newRules(t, claimcheck.Policy{})
	tests := []struct {
		name   string
		blob   string
		want   claimcheck.BlobName // zero: rejected
		reason string              // substring of the rejection reason
	}{
		{"simple", "acme/q1.txt", claimcheck.BlobName{Name: "acme/q1.txt", Tenant: "acme", Path: "q1.txt", Ext: ".txt"}, ""},
		{"nested", "acme/reports/2026/q1.MD", claimcheck.BlobName{Name: "acme/reports/2026/q1.MD", Tenant: "acme", Path: "reports/2026/q1.MD", Ext: ".md"}, ""},
		{"unicode", "acme/données/漢字.json", claimcheck.BlobName{Name: "acme/données/漢字.json", Tenant: "acme", Path: "données/漢字.json", Ext: ".json"}, ""},
		{"percent literal", "acme/100% done.txt", claimcheck.BlobName{Name: "acme/100% done.txt", Tenant: "acme", Path: "100% done.txt", Ext: ".txt"}, ""},
		{"dots inside", "acme/v1.2.final.csv", claimcheck.BlobName{Name: "acme/v1.2.final.csv", Tenant: "acme", Path: "v1.2.final.csv", Ext: ".csv"}, ""},
		{"no tenant folder", "q1.txt", claimcheck.BlobName{}, "tenant folder"},
		{"tenant too short", "a/q1.txt", claimcheck.BlobName{}, "tenant"},
		{"tenant uppercase", "Acme/q1.txt", claimcheck.BlobName{}, "tenant"},
		{"tenant digit first", "1acme/q1.txt", claimcheck.BlobName{}, "tenant"},
		{"tenant underscore", "ac_me/q1.txt", claimcheck.BlobName{}, "tenant"},
		{"tenant too long", strings.Repeat("a", 64) + "/q1.txt", claimcheck.BlobName{}, "tenant"},
		{"traversal", "acme/../globex/q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"traversal at end", "acme/x/..", claimcheck.BlobName{}, "invalid blob name"},
		{"dot segment", "acme/./q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"encoded traversal", "acme/%2e%2e/q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"mixed-case encoding", "acme/%2E%2e/q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"double encoding", "acme/%252e%252e/q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"triple encoding", "acme/%25252e%25252e/q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"encoded slash traversal", "acme/..%2fq1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"backslash", "acme/..\\q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"encoded backslash", "acme/x%5c..%5cq1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"NUL", "acme/q\x001.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"encoded NUL", "acme/q%001.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"newline", "acme/q\n1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"DEL", "acme/q\x7f1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"C1 control", "acme/q\u00851.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"bidi override", "acme/\u202etxt.exe", claimcheck.BlobName{}, "invalid blob name"},
		{"zero-width space", "acme/q\u200b1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"invalid UTF-8", "acme/q\xff1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"empty", "", claimcheck.BlobName{}, "invalid blob name"},
		{"empty segment", "acme//q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"leading slash", "/acme/q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"trailing slash", "acme/q1.txt/", claimcheck.BlobName{}, "invalid blob name"},
		{"trailing dot", "acme/q1.txt.", claimcheck.BlobName{}, "invalid blob name"},
		{"segment ends with dot", "acme/dir./q1.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"too long", "acme/" + strings.Repeat("x", claimcheck.MaxNameBytes) + ".txt", claimcheck.BlobName{}, "invalid blob name"},
		{"too many segments", "acme/" + strings.Repeat("d/", claimcheck.MaxNameSegments) + "q.txt", claimcheck.BlobName{}, "invalid blob name"},
		{"unsupported extension", "acme/q1.exe", claimcheck.BlobName{}, "unsupported"},
		{"pdf not supported", "acme/q1.pdf", claimcheck.BlobName{}, "unsupported"},
		{"no extension", "acme/README", claimcheck.BlobName{}, "unsupported"},
		{"extension only", "acme/.txt", claimcheck.BlobName{}, "unsupported"},
		{"double extension", "acme/q1.txt.exe", claimcheck.BlobName{}, "unsupported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := r.ParseName(tt.blob)
			if tt.reason == "" {
				if err != nil || got != tt.want {
					t.Errorf("ParseName(%q) = %+v, %v; want %+v", tt.blob, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseName(%q) = %+v, want a rejection", tt.blob, got)
			}
			if outcome.Of(err) != outcome.Rejected || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("ParseName(%q) = %v, want a rejection mentioning %q", tt.blob, err, tt.reason)
			}
		})
	}
}

func TestSplitTenant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, tenant, rest string
		ok                     bool
	}{
		{"simple", "acme/q1.txt", "acme", "q1.txt", true},
		// The host would bind {tenant} greedily to "acme/reports".
		{"first segment only", "acme/reports/q1.txt", "acme", "reports/q1.txt", true},
		{"no slash", "q1.txt", "", "", false},
		{"nothing after", "acme/", "", "", false},
		{"bad tenant", "ACME/q1.txt", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tenant, rest, err := claimcheck.SplitTenant(tt.in)
			if (err == nil) != tt.ok || tenant != tt.tenant || rest != tt.rest {
				t.Errorf("SplitTenant(%q) = %q, %q, %v; want %q, %q, ok %v", tt.in, tenant, rest, err, tt.tenant, tt.rest, tt.ok)
			}
		})
	}
}

func TestRules_BlobURL_RoundTrip(t *testing.T) {
	t.Parallel()
	r := newRules(t, claimcheck.Policy{})
	for _, n := range []string{"acme/q1.txt", "acme/a b/c#d?.md", "acme/100% done.txt", "acme/é/漢字.csv", "acme/a+b=c&d.json"} {
		name, err := r.ParseName(n)
		if err != nil {
			t.Fatalf("ParseName(%q): %v", n, err)
		}
		got, err := r.ParseURL(r.BlobURL(name))
		if err != nil || got != name {
			t.Errorf("ParseURL(BlobURL(%q)) = %+v, %v; want %+v", n, got, err, name)
		}
	}
}
