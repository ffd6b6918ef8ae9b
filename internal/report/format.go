package report

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/offpath/offpath/internal/catalog"
)

// Number formats n with thousands separators: "12,345".
func Number[T ~int | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Percent formats part of whole as a whole percentage, "92% of tickets",
// or "" when whole is zero. It rounds down, so that 99.6% is not "100%".
func Percent(part, whole int) string {
	if whole <= 0 {
		return ""
	}
	return fmt.Sprintf("%d%% of tickets", part*100/whole)
}

// Dollars formats a cost for a reader: cents from one cent up ("$1,234.57"),
// four decimals below it so that a small test job does not read as free
// ("$0.0042", "<$0.0001"), rounded half up.
func Dollars(m catalog.Money) string {
	const cent = 10_000_000 // nano-dollars
	if m < 0 {
		return "-" + Dollars(-m)
	}
	if m > 0 && m < cent {
		switch tenThousandths := (int64(m) + 50_000) / 100_000; {
		case tenThousandths == 0:
			return "<$0.0001"
		case tenThousandths < 100:
			return fmt.Sprintf("$0.%04d", tenThousandths)
		}
	}
	cents := (int64(m) + cent/2) / cent
	return fmt.Sprintf("$%s.%02d", Number(cents/100), cents%100)
}

// linker builds the link back to a ticket from a template such as
// "https://support.example.com/tickets/{id}".
type linker struct{ before, after string }

// newLinker checks the template: empty (no links), or an absolute http(s)
// URL with exactly one "{id}".
func newLinker(tmpl string) (linker, error) {
	if tmpl == "" {
		return linker{}, nil
	}
	before, after, ok := strings.Cut(tmpl, "{id}")
	if !ok || strings.Contains(after, "{id}") {
		return linker{}, fmt.Errorf("ticket URL template %q: want exactly one {id}", tmpl)
	}
	u, err := url.Parse(before + "T-1" + after)
	if err != nil {
		return linker{}, fmt.Errorf("ticket URL template %q: %w", tmpl, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return linker{}, fmt.Errorf("ticket URL template %q: want an absolute http or https URL", tmpl)
	}
	return linker{before: before, after: after}, nil
}

// url returns the ticket's link, the id path-escaped, or "" without a
// template or an id.
func (l linker) url(id string) string {
	if l.before == "" || id == "" {
		return ""
	}
	return l.before + url.PathEscape(id) + l.after
}

// markdownURL makes a URL safe as a Markdown link destination: the
// characters that would end or break it are percent-encoded.
func markdownURL(u string) string {
	if !strings.ContainsAny(u, " ()<>\r\n") {
		return u
	}
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		switch c := u[i]; c {
		case ' ', '(', ')', '<', '>', '\r', '\n':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// EscapeMarkdown makes hostile text inert in Markdown: whitespace runs
// (newlines included) and control characters become one space, so the text
// stays on its line; the characters that start inline constructs (emphasis,
// code, links, raw HTML, tables, strikethrough, entities) are
// backslash-escaped; and a leading character that would start a block
// (heading, list, quote, ordered list) is escaped too. Ordinary punctuation
// is left alone so that the raw text stays readable.
func EscapeMarkdown(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/16)
	space := false // a whitespace run is pending
	digits := true // everything written so far is digits
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '~', '&':
			b.WriteByte('\\')
		case '#', '-', '+', '=':
			if b.Len() == 0 {
				b.WriteByte('\\')
			}
		case '.', ')':
			if digits && b.Len() > 0 && b.Len() <= 9 {
				b.WriteByte('\\') // "1." or "1)" would start an ordered list
			}
		}
		digits = digits && r >= '0' && r <= '9'
		b.WriteRune(r)
	}
	return b.String()
}
