package report_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/report"
)

func renderHTML(t *testing.T, rep *report.Report) string {
	t.Helper()
	var b strings.Builder
	if err := newRenderer(t).HTML(&b, rep); err != nil {
		t.Fatalf("HTML: %v", err)
	}
	return b.String()
}

func TestRenderer_HTML(t *testing.T) {
	t.Parallel()
	doc := parseHTML(t, renderHTML(t, sample(60)))

	if got, want := text(find(doc, tag(atom.H1))), "Ticket summaries for Saturday 14 March 2026"; got != want {
		t.Errorf("h1 = %q, want %q", got, want)
	}
	wantCounts := map[string]string{
		"tickets": "60", "summarised": "52", "refused": "3", "failed": "5", "skipped": "7",
		"unchanged": "312", "tokens": "74,520", "cost": "$0.0053",
	}
	for name, want := range wantCounts {
		if got := text(find(doc, dataCount(name))); got != want {
			t.Errorf("count %s = %q, want %q", name, got, want)
		}
	}
	var order []string
	for _, s := range findAll(doc, tag(atom.Section)) {
		order = append(order, attr(s, "id"))
	}
	if got, want := strings.Join(order, ","), "counts,summaries,refused,failed,skipped"; got != want {
		t.Errorf("sections = %s, want %s", got, want)
	}

	tests := []struct {
		section string
		rows    func(*html.Node) bool
		want    int
	}{
		{"summaries", class("ticket"), 52},
		{"refused", tag(atom.Tr), 3 + 1},
		{"failed", tag(atom.Tr), 5 + 1},
		{"skipped", tag(atom.Tr), 5 + 1},
	}
	for _, tt := range tests {
		if got := len(findAll(find(doc, id(tt.section)), tt.rows)); got != tt.want {
			t.Errorf("section %s has %d rows, want %d (with the header row for tables)", tt.section, got, tt.want)
		}
	}
	if got := text(find(doc, id("skipped"))); !strings.Contains(got, "and 2 more, not listed") {
		t.Errorf("skipped section does not mention the 2 unlisted: %q", got)
	}

	first := find(find(doc, id("summaries")), class("ticket"))
	link := find(first, class("tid"))
	if attr(link, "href") != "https://support.example.com/tickets/T-10000" || text(link) != "T-10000" {
		t.Errorf("first ticket link = %q → %q, want T-10000 → its ticket", text(link), attr(link, "href"))
	}
	if got := text(find(first, class("subject"))); got != "Cannot log in after password reset" {
		t.Errorf("first subject = %q", got)
	}
	if got := text(find(first, class("summary"))); !strings.HasPrefix(got, "The customer cannot log in") {
		t.Errorf("first summary = %q", got)
	}
	outcomes := findAll(find(doc, id("failed")), class("outcome"))
	var got []string
	for _, o := range outcomes {
		got = append(got, text(o))
	}
	if strings.Join(got, ",") != "failed,expired,cancelled,expired,failed" {
		t.Errorf("failed outcomes = %v", got)
	}
}

func TestRenderer_HTML_HostileTextIsText(t *testing.T) {
	t.Parallel()
	page := renderHTML(t, sample(60))
	doc := parseHTML(t, page)

	if n := findAll(doc, func(n *html.Node) bool {
		return n.DataAtom == atom.Script || n.DataAtom == atom.Img || n.DataAtom == atom.Iframe || n.DataAtom == atom.Link || n.DataAtom == atom.Object
	}); len(n) != 0 {
		t.Errorf("page has %d script, img, iframe, link or object elements, want none", len(n))
	}
	for _, n := range findAll(doc, func(*html.Node) bool { return true }) {
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || strings.HasPrefix(strings.TrimSpace(strings.ToLower(a.Val)), "javascript:") {
				t.Errorf("<%s %s=%q>: no event handlers or script URLs wanted", n.Data, a.Key, a.Val)
			}
		}
	}
	style := text(find(doc, tag(atom.Style)))
	if strings.Contains(style, "url(") || strings.Contains(style, "@import") {
		t.Errorf("the inline CSS loads something: want no url() or @import")
	}

	var hostileTickets int
	for _, tk := range findAll(find(doc, id("summaries")), class("ticket")) {
		if text(find(tk, class("subject"))) != hostile {
			continue
		}
		hostileTickets++
		if got := text(find(tk, class("summary"))); got != hostile {
			t.Errorf("hostile summary rendered as %q, want the text as written", got)
		}
		if got := text(find(tk, class("customer"))); got != hostile {
			t.Errorf("hostile customer rendered as %q, want the text as written", got)
		}
	}
	if hostileTickets != 1 {
		t.Errorf("found %d summaries whose subject reads as the hostile text, want 1", hostileTickets)
	}
	if strings.Contains(page, "<script>document") {
		t.Errorf("the page source holds the hostile <script> unescaped")
	}
}

func TestRenderer_HTML_Empty(t *testing.T) {
	t.Parallel()
	doc := parseHTML(t, renderHTML(t, &report.Report{}))
	for _, name := range []string{"tickets", "summarised", "refused", "failed", "skipped", "unchanged", "tokens"} {
		if got := text(find(doc, dataCount(name))); got != "0" {
			t.Errorf("count %s = %q, want 0", name, got)
		}
	}
	for section, want := range map[string]string{
		"counts": "No tickets were sent for summary.", "summaries": "No summaries.", "refused": "Nothing was refused.",
		"failed": "Every ticket sent was answered.", "skipped": "No document was skipped.",
	} {
		if got := text(find(doc, id(section))); !strings.Contains(got, want) {
			t.Errorf("section %s = %q, want it to say %q", section, got, want)
		}
	}
}

func TestRenderer_Markdown(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := newRenderer(t).Markdown(&b, sample(60)); err != nil {
		t.Fatalf("Markdown: %v", err)
	}
	md := b.String()
	for _, want := range []string{
		"# Ticket summaries for Saturday 14 March 2026\n",
		"| 60 | 52 | 3 | 5 | 7 | 312 | 74,520 | $0.0053 |\n",
		"## Summaries (52)\n", "## Refused (3)\n", "## Failed (5)\n", "## Skipped (7)\n",
		"- **[T-10000](https://support.example.com/tickets/T-10000)** Cannot log in after password reset · Northwind Traders  \n  The customer cannot log in",
		"- **[T-10011](https://support.example.com/tickets/T-10011)** Invoice charged twice in March  \n  failed: server\\_error: the model did not answer\n",
		"- 2026-03-14/export-1400.jsonl, line 3, ticket T-10003: body too large (5.0 MiB of JSON; limit 256 KiB)\n",
		"… and 2 more, not listed.",
		`\<script\>document.body.dataset.pwned=1\</script\>\<img src=x onerror="document.body.dataset.pwned=1"\> \*\*bold\*\* \[x\](javascript:alert(1)) \| a \| b \& c`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if strings.Contains(md, "<script>") || strings.Contains(md, "**bold**") {
		t.Errorf("Markdown holds hostile text unescaped")
	}
	sections := strings.Split(md, "\n## ")
	if len(sections) != 5 {
		t.Fatalf("Markdown has %d parts split at level-2 headings, want 5", len(sections))
	}
	for i, want := range []int{52, 3, 5, 5} {
		if got := strings.Count(sections[i+1], "\n- "); got != want {
			t.Errorf("section %q has %d entries, want %d", strings.SplitN(sections[i+1], "\n", 2)[0], got, want)
		}
	}
}

func TestRenderer_Errors(t *testing.T) {
	t.Parallel()
	broken := errors.New("disk full")
	tests := []struct {
		name    string
		rep     *report.Report
		w       *failingWriter
		wantErr string
	}{
		{"unknown outcome", &report.Report{Items: []report.Item{{TicketID: "T-1", Outcome: "maybe"}}}, &failingWriter{}, `unknown outcome "maybe"`},
		{"total below the list", &report.Report{Skipped: make([]report.Skipped, 3), SkippedTotal: 2}, &failingWriter{}, "below the 3 skipped"},
		{"negative usage", &report.Report{Usage: ledger.Usage{PromptTokens: -1}}, &failingWriter{}, "negative usage"},
		{"writer fails", sample(3000), &failingWriter{after: 100 << 10, err: broken}, "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, format := range []string{"html", "markdown"} {
				r := newRenderer(t)
				render := map[string]func() error{
					"html":     func() error { return r.HTML(tt.w, tt.rep) },
					"markdown": func() error { return r.Markdown(tt.w, tt.rep) },
				}[format]
				tt.w.n = 0
				err := render()
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s = %v, want an error about %q", format, err, tt.wantErr)
				}
				if tt.w.err == nil && tt.w.n != 0 {
					t.Errorf("%s wrote %d bytes of an invalid report, want none", format, tt.w.n)
				}
			}
		})
	}
}

// failingWriter fails once more than after bytes have been written to it.
type failingWriter struct {
	after, n int
	err      error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.err != nil && w.n+len(p) > w.after {
		return 0, fmt.Errorf("write: %w", w.err)
	}
	w.n += len(p)
	return len(p), nil
}

func TestRenderer_Links(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tmpl, wantMD, wantHref string
	}{
		{"linked", "https://support.example.com/tickets/{id}", "- **[T-1](https://support.example.com/tickets/T-1)** Printer · ACME  \n", "https://support.example.com/tickets/T-1"},
		{"destination kept intact", "https://x.example/queue (new)/{id}", "- **[T-1](https://x.example/queue%20%28new%29/T-1)** Printer · ACME  \n", "https://x.example/queue%20%28new%29/T-1"},
		{"no template", "", "- **T-1** Printer · ACME  \n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := report.New(report.Options{TicketURL: tt.tmpl})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			rep := &report.Report{Items: []report.Item{{TicketID: "T-1", Subject: "Printer", Customer: "ACME", Outcome: report.OK, Summary: "S."}}}
			var md, page strings.Builder
			if err := r.Markdown(&md, rep); err != nil {
				t.Fatalf("Markdown: %v", err)
			}
			if !strings.Contains(md.String(), tt.wantMD) {
				t.Errorf("Markdown lacks %q:\n%s", tt.wantMD, md.String())
			}
			if err := r.HTML(&page, rep); err != nil {
				t.Fatalf("HTML: %v", err)
			}
			tid := find(parseHTML(t, page.String()), class("tid"))
			if text(tid) != "T-1" || attr(tid, "href") != tt.wantHref || (tt.wantHref == "") != (tid.DataAtom == atom.Span) {
				t.Errorf("HTML ticket id = <%s href=%q>%s, want href %q (a span without one)", tid.Data, attr(tid, "href"), text(tid), tt.wantHref)
			}
		})
	}
}
