package report

import (
	"bufio"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"io"
	"iter"
	texttemplate "text/template"
	"time"
)

// templates holds the page templates; it is read once, by New.
//
//go:embed templates
var templates embed.FS

// Options configure a Renderer.
type Options struct {
	// TicketURL is the link back to a ticket in the support system, with
	// "{id}" where the path-escaped ticket id goes, e.g.
	// "https://support.example.com/tickets/{id}". Empty: ids are not linked.
	TicketURL string
	// Title heads the report. Default "Ticket summaries".
	Title string
}

// Renderer writes reports. It is safe for concurrent use.
type Renderer struct {
	html  *htmltemplate.Template
	md    *texttemplate.Template
	link  linker
	title string
}

// New parses the templates and checks the options.
func New(opts Options) (*Renderer, error) {
	link, err := newLinker(opts.TicketURL)
	if err != nil {
		return nil, err
	}
	r := &Renderer{link: link, title: opts.Title}
	if r.title == "" {
		r.title = "Ticket summaries"
	}
	funcs := map[string]any{
		"ticketURL": r.link.url,
		"number":    Number[int],
		"number64":  Number[int64],
		"dollars":   Dollars,
		"percent":   Percent,
		"md":        EscapeMarkdown,
		"mdURL":     func(id string) string { return markdownURL(r.link.url(id)) },
	}
	r.html, err = htmltemplate.New("page.html.tmpl").Funcs(funcs).ParseFS(templates, "templates/page.html.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse html template: %w", err)
	}
	r.md, err = texttemplate.New("page.md.tmpl").Funcs(funcs).ParseFS(templates, "templates/page.md.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse markdown template: %w", err)
	}
	return r, nil
}

// HTML writes rep as a self-contained HTML page.
func (r *Renderer) HTML(w io.Writer, rep *Report) error {
	return r.render(w, rep, r.html.Execute)
}

// Markdown writes rep as CommonMark (GitHub-flavoured for the counts table).
func (r *Renderer) Markdown(w io.Writer, rep *Report) error {
	return r.render(w, rep, r.md.Execute)
}

// TicketURL returns the link to ticket id, or "" without a URL template.
func (r *Renderer) TicketURL(id string) string { return r.link.url(id) }

func (r *Renderer) render(w io.Writer, rep *Report, execute func(io.Writer, any) error) error {
	if err := rep.validate(); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	p := page{Report: rep, Title: r.title, Counts: rep.counts(), Linked: r.link.before != ""}
	if err := execute(bw, p); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

// page is what the templates see.
type page struct {
	*Report
	Title  string
	Counts counts
	Linked bool
}

// Date is the report's day, e.g. "Saturday 14 March 2026".
func (p page) Date() string { return p.Day.Format("Monday 2 January 2006") }

// ShortDate is the report's day as "2026-03-14".
func (p page) ShortDate() string { return p.Day.Format(time.DateOnly) }

// GeneratedAt is when the report was written, e.g. "2026-03-15 06:02 UTC".
func (p page) GeneratedAt() string {
	if p.Generated.IsZero() {
		return ""
	}
	return p.Generated.Format("2006-01-02 15:04 MST")
}

// Summaries, Refusals and Failures walk Items once per section, in order,
// without copying them.
func (p page) Summaries() iter.Seq[Item] { return p.only(OK) }
func (p page) Refusals() iter.Seq[Item]  { return p.only(Refused) }
func (p page) Failures() iter.Seq[Item]  { return p.only(Failed, Expired, Cancelled) }

func (p page) only(outcomes ...Outcome) iter.Seq[Item] {
	return func(yield func(Item) bool) {
		for _, it := range p.Items {
			for _, o := range outcomes {
				if it.Outcome == o && !yield(it) {
					return
				}
			}
		}
	}
}
