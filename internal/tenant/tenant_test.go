package tenant_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/tenant"
)

func TestValidateID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"simple", "contoso", true},
		{"hyphen and digits", "team-42", true},
		{"shortest", "ab", true},
		{"longest", "a" + strings.Repeat("b", 62), true},
		{"empty", "", false},
		{"one char", "a", false},
		{"too long", "a" + strings.Repeat("b", 63), false},
		{"uppercase", "Contoso", false},
		{"starts with digit", "1team", false},
		{"starts with hyphen", "-team", false},
		{"slash", "a/b", false},
		{"backslash", `a\b`, false},
		{"hash", "a#b", false},
		{"question mark", "a?b", false},
		{"control char", "ab\x00", false},
		{"newline", "ab\n", false},
		{"del", "ab\x7f", false},
		{"quote (OData injection)", "a' or PartitionKey ne '", false},
		{"pipe (partition separator)", "a|2026-11", false},
		{"space", "a b", false},
		{"unicode look-alike", "соntoso", false},
		{"dot dot", "..", false},
		{"percent-encoded", "a%2fb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tenant.ValidateID(tt.id)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
			}
			if err != nil && !errors.Is(err, tenant.ErrInvalid) {
				t.Errorf("ValidateID(%q) = %v, want ErrInvalid", tt.id, err)
			}
		})
	}
}

func TestTenant_Validate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	good := tenant.New("contoso", "Contoso Support", now)
	good.Aliases = []string{"summarize", "embed"}
	good.AppIDs = []string{"11111111-2222-3333-4444-555555555555"}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}

	bad := good
	bad.ID = "Bad/ID"
	bad.DisplayName = "tab\there"
	bad.Aliases = []string{"summarize", "summarize", "Nope"}
	bad.MonthlyTokenBudget = -1
	bad.State = "paused"
	bad.AppIDs = []string{"11111111-2222-3333-4444-55555555555G"}
	err := bad.Validate()
	if !errors.Is(err, tenant.ErrInvalid) {
		t.Fatalf("Validate(bad) = %v, want ErrInvalid", err)
	}
	for _, field := range []string{"tenant id", "display_name", "aliases[1]", "aliases[2]", "monthly_token_budget", "state", "app_ids[0]"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("Validate(bad) = %q, want it to name %s", err, field)
		}
	}
}

func TestIsAppID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"11111111-2222-3333-4444-555555555555": true,
		"abcdef01-2345-6789-abcd-ef0123456789": true,
		"ABCDEF01-2345-6789-abcd-ef0123456789": false,
		"11111111222233334444555555555555":     false,
		"11111111-2222-3333-4444-55555555555":  false,
		"11111111-2222-3333-4444_555555555555": false,
		"":                                     false,
	} {
		if got := tenant.IsAppID(in); got != want {
			t.Errorf("IsAppID(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestParseState(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"active", "suspended"} {
		if got, err := tenant.ParseState(s); err != nil || string(got) != s {
			t.Errorf("ParseState(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Active", "deleted"} {
		if _, err := tenant.ParseState(s); !errors.Is(err, tenant.ErrInvalid) {
			t.Errorf("ParseState(%q) = %v, want ErrInvalid", s, err)
		}
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	tn := tenant.Tenant{Aliases: []string{"summarize"}}
	if !tn.Allows("summarize") || tn.Allows("embed") || tn.Allows("") {
		t.Errorf("Allows: wrong answers for aliases %v", tn.Aliases)
	}
}
