package claimcheck_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/outcome"
)

// FuzzRules_ParseName checks that an accepted name never escapes its
// tenant's folder, whatever layer of encoding it hides behind, and that its
// URL parses back to it.
func FuzzRules_ParseName(f *testing.F) {
	for _, s := range []string{"acme/q1.txt", "acme/../x.txt", "acme/%2e%2e/x.txt", "acme/%252e./x.md", "acme/a\\b.txt", "acme/\u202e.txt", "acme/100%.csv"} {
		f.Add(s)
	}
	r := newRules(f, claimcheck.Policy{})
	f.Fuzz(func(t *testing.T, name string) {
		b, err := r.ParseName(name)
		if err != nil {
			if outcome.Of(err) != outcome.Rejected {
				t.Fatalf("ParseName(%q) error kind %v, want rejected", name, outcome.Of(err))
			}
			return
		}
		for layer, s := 0, name; layer < 3; layer++ {
			for _, seg := range strings.Split(s, "/") {
				if seg == ".." || seg == "." || seg == "" {
					t.Fatalf("ParseName(%q) accepted segment %q at layer %d", name, seg, layer)
				}
			}
			if strings.ContainsAny(s, "\\\x00\n\r") {
				t.Fatalf("ParseName(%q) accepted a backslash or control character", name)
			}
			d, err := url.PathUnescape(s)
			if err != nil {
				break
			}
			s = d
		}
		if b.Tenant == "" || !strings.HasPrefix(name, b.Tenant+"/") {
			t.Fatalf("ParseName(%q).Tenant = %q", name, b.Tenant)
		}
		back, err := r.ParseURL(r.BlobURL(b))
		if err != nil || back != b {
			t.Fatalf("ParseURL(BlobURL(%q)) = %+v, %v", name, back, err)
		}
	})
}

// FuzzRules_Decode checks that Decode never panics, rejects rather than
// retries, and that whatever it accepts re-encodes to an equal message.
func FuzzRules_Decode(f *testing.F) {
	r := newRules(f, claimcheck.Policy{})
	good, err := r.Encode(validMessage())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"version":1}`))
	f.Add([]byte(strings.Replace(string(good), "/acme/", "/acme/%2e%2e/", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := r.Decode(data)
		if err != nil {
			if outcome.Of(err) != outcome.Rejected {
				t.Fatalf("Decode error kind %v, want rejected: %v", outcome.Of(err), err)
			}
			return
		}
		again, err := r.Encode(m)
		if err != nil {
			t.Fatalf("Encode(Decode(x)) = %v", err)
		}
		m2, err := r.Decode(again)
		if err != nil || m2 != m {
			t.Fatalf("round trip: %+v, %v; want %+v", m2, err, m)
		}
	})
}
