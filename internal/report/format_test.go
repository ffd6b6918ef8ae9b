package report_test

import (
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/report"
)

func TestNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {74520, "74,520"}, {1234567, "1,234,567"}, {-1234, "-1,234"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			if got := report.Number(tt.n); got != tt.want {
				t.Errorf("Number(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

func TestDollars(t *testing.T) {
	t.Parallel()
	const dollar = catalog.Money(1_000_000_000)
	tests := []struct {
		name string
		m    catalog.Money
		want string
	}{
		{"zero", 0, "$0.00"},
		{"a nano-dollar is not free", 1, "<$0.0001"},
		{"a ten-thousandth", dollar / 10_000, "$0.0001"},
		{"half a cent", dollar / 200, "$0.0050"},
		{"just under a cent", dollar/100 - 1, "$0.01"},
		{"a cent", dollar / 100, "$0.01"},
		{"rounds half up", dollar + dollar/200, "$1.01"},
		{"thousands", 1234*dollar + 567*dollar/1000, "$1,234.57"},
		{"negative", -dollar / 2, "-$0.50"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := report.Dollars(tt.m); got != tt.want {
				t.Errorf("Dollars(%d) = %q, want %q", tt.m, got, tt.want)
			}
		})
	}
}

func TestPercent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		part, whole int
		want        string
	}{
		{52, 60, "86% of tickets"}, {0, 0, ""}, {1991, 2000, "99% of tickets"}, {5, 5, "100% of tickets"},
	}
	for _, tt := range tests {
		if got := report.Percent(tt.part, tt.whole); got != tt.want {
			t.Errorf("Percent(%d, %d) = %q, want %q", tt.part, tt.whole, got, tt.want)
		}
	}
}

func TestEscapeMarkdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain text stays readable", "Can't log in since Monday (again), 3 times.", "Can't log in since Monday (again), 3 times."},
		{"emphasis", "**bold** and _it_", `\*\*bold\*\* and \_it\_`},
		{"link", "[click](javascript:alert(1))", `\[click\](javascript:alert(1))`},
		{"image", "![x](http://evil/x.png)", `!\[x\](http://evil/x.png)`},
		{"raw html", "<script>alert(1)</script>", `\<script\>alert(1)\</script\>`},
		{"entity", "&lt;b&gt;", `\&lt;b\&gt;`},
		{"code and tables", "`rm -rf` | col", "\\`rm -rf\\` \\| col"},
		{"backslash", `C:\temp`, `C:\\temp`},
		{"strikethrough", "~~gone~~", `\~\~gone\~\~`},
		{"newlines stay on the line", "one\n\n# two\r\n- three", "one # two - three"},
		{"leading heading", "# Urgent", `\# Urgent`},
		{"leading list", "- item", `\- item`},
		{"leading plus", "+1 from me", `\+1 from me`},
		{"leading quote", "> quoted", `\> quoted`},
		{"leading ordered list", "1. Reset the router", `1\. Reset the router`},
		{"leading ordered list with paren", "12) step", `12\) step`},
		{"number mid-text", "version 2. Then", "version 2. Then"},
		{"control characters", "a\x00b\x1bc", "a b c"},
		{"leading space before a marker", "   # x", `\# x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := report.EscapeMarkdown(tt.in); got != tt.want {
				t.Errorf("EscapeMarkdown(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNew_TicketURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tmpl, id, want, wantErr string
	}{
		{"path", "https://support.example.com/tickets/{id}", "T-1042", "https://support.example.com/tickets/T-1042", ""},
		{"query", "https://support.example.com/view?ticket={id}&tab=1", "T-1", "https://support.example.com/view?ticket=T-1&tab=1", ""},
		{"template with markdown-hostile characters", "https://x.example/t (new)/{id}", "T-1", "https://x.example/t (new)/T-1", ""},
		{"id is escaped", "https://support.example.com/tickets/{id}", "a/b c?d#e", "https://support.example.com/tickets/a%2Fb%20c%3Fd%23e", ""},
		{"no template, no links", "", "T-1", "", ""},
		{"no placeholder", "https://support.example.com/tickets/", "", "", "exactly one {id}"},
		{"two placeholders", "https://x.example/{id}/{id}", "", "", "exactly one {id}"},
		{"script scheme", "javascript:alert('{id}')", "", "", "absolute http or https"},
		{"relative", "/tickets/{id}", "", "", "absolute http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := report.New(report.Options{TicketURL: tt.tmpl})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("New(%q) = %v, want an error about %q", tt.tmpl, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q): %v", tt.tmpl, err)
			}
			if got := r.TicketURL(tt.id); got != tt.want {
				t.Errorf("TicketURL(%q) = %q, want %q", tt.id, got, tt.want)
			}
		})
	}
}
