package batchfile_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/batchfile"
)

// hostileItemIDs are item ids a tenant might send.
func hostileItemIDs() map[string]string {
	return map[string]string{
		"empty":           "",
		"plain":           "ticket-42",
		"dots and colons": "a.b.c:d:e",
		"control chars":   "a\x00b\nc\rd\te\x1b[31m",
		"unicode":         "résumé-日本語-🚀",
		"invalid utf8":    "\xff\xfe\xc3\x28",
		"long":            strings.Repeat("x", batchfile.MaxItemIDLen),
		"json-ish":        `{"custom_id":"x"}\"`,
		"line separators": "a\u2028b\u2029c",
	}
}

var customIDShape = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}\.(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\.[A-Za-z0-9_-]{8}$`)

func TestRef_RoundTrip(t *testing.T) {
	t.Parallel()
	for name, item := range hostileItemIDs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ref, err := batchfile.NewRef(strings.Repeat("J", batchfile.MaxJobIDLen), 999_999, 999_999, "tenant-a", item)
			if err != nil {
				t.Fatalf("NewRef: %v", err)
			}
			id := ref.String()
			if len(id) > batchfile.MaxCustomIDLen || !customIDShape.MatchString(id) {
				t.Fatalf("custom_id %q (%d chars) is not of the documented shape", id, len(id))
			}
			got, err := batchfile.ParseCustomID(id)
			if err != nil {
				t.Fatalf("ParseCustomID(%q): %v", id, err)
			}
			if got != ref {
				t.Errorf("ParseCustomID(%q) = %+v, want %+v", id, got, ref)
			}
			if !got.Matches("tenant-a", item) {
				t.Error("Matches(original tenant and item) = false")
			}
			if got.Matches("tenant-b", item) || got.Matches("tenant-a", item+"x") {
				t.Error("Matches(another tenant or item) = true")
			}
		})
	}
}

func TestCheck_SeparatesTenantFromItem(t *testing.T) {
	t.Parallel()
	if batchfile.Check("ab", "c") == batchfile.Check("a", "bc") {
		t.Error(`Check("ab","c") == Check("a","bc"): tenant and item boundary is lost`)
	}
}

func TestParseCustomID_Rejects(t *testing.T) {
	t.Parallel()
	good := "job1.0.7.AAAAAAAA"
	if _, err := batchfile.ParseCustomID(good); err != nil {
		t.Fatalf("ParseCustomID(%q): %v", good, err)
	}
	for _, id := range []string{
		"", "job1", "job1.0.7", "job1.0.7.AAAAAAAA.x", ".0.7.AAAAAAAA", "jo b.0.7.AAAAAAAA",
		"job1.00.7.AAAAAAAA", "job1.0.-7.AAAAAAAA", "job1.0.+7.AAAAAAAA", "job1.0.1234567.AAAAAAAA",
		"job1.0.7.AAAAAAA", "job1.0.7.AAAAAAA=", "job1.0.7.AAAA/AAA", "job1.x.7.AAAAAAAA",
		strings.Repeat("j", 33) + ".0.7.AAAAAAAA", strings.Repeat("9", 70),
	} {
		if _, err := batchfile.ParseCustomID(id); !errors.Is(err, batchfile.ErrCustomID) {
			t.Errorf("ParseCustomID(%q) error = %v, want ErrCustomID", id, err)
		}
	}
}

func TestNewRef_RejectsBadJob(t *testing.T) {
	t.Parallel()
	for _, job := range []string{"", "a.b", "a b", "é", strings.Repeat("j", 33)} {
		if _, err := batchfile.NewRef(job, 0, 0, "t", "i"); !errors.Is(err, batchfile.ErrCustomID) {
			t.Errorf("NewRef(job %q) error = %v, want ErrCustomID", job, err)
		}
	}
}

// FuzzParseCustomID: the decoder never panics, and whatever it accepts is
// exactly what String gives back (the encoding is canonical, so injective).
func FuzzParseCustomID(f *testing.F) {
	f.Add("job1.0.7.AAAAAAAA")
	f.Add("j-_9.999999.0.Qm9vdF9j")
	f.Add("job1.00.7.AAAAAAAA")
	f.Add("\xff.0.0.AAAAAAAA")
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := batchfile.ParseCustomID(s)
		if err != nil {
			return
		}
		if got := ref.String(); got != s {
			t.Errorf("ParseCustomID(%q).String() = %q", s, got)
		}
		if len(s) > batchfile.MaxCustomIDLen {
			t.Errorf("accepted %d characters", len(s))
		}
	})
}
