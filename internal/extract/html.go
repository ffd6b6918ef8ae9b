package extract

import (
	"errors"
	"fmt"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/offpath/offpath/internal/outcome"
)

// htmlProducer writes the visible text of an HTML document, one token at a
// time. Subtrees that are not shown as text (scripts, styles, templates,
// embedded SVG and MathML, ...) are skipped; block elements become line or
// paragraph breaks; whitespace outside <pre> collapses to single spaces.
type htmlProducer struct {
	z       *html.Tokenizer
	skip    atom.Atom // the element being skipped, 0 when none
	skipN   int       // nesting of skip
	pre     int       // depth inside <pre>/<textarea>
	maxTok  int
	scratch []byte
}

func newHTMLProducer(src *source, maxToken int) *htmlProducer {
	z := html.NewTokenizer(src)
	z.SetMaxBuf(maxToken)
	return &htmlProducer{z: z, maxTok: maxToken}
}

// hidden are elements whose content is not visible text.
func hidden(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Math,
		atom.Iframe, atom.Object, atom.Canvas, atom.Select, atom.Noembed, atom.Noframes:
		return true
	}
	return false
}

// breakOf is what an element's start or end adds around its content: 2 for
// a paragraph break, 1 for a line break, 0 for nothing (inline).
func breakOf(a atom.Atom) int {
	switch a {
	case atom.P, atom.Div, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Section, atom.Article,
		atom.Header, atom.Footer, atom.Main, atom.Nav, atom.Aside, atom.Blockquote, atom.Pre, atom.Table,
		atom.Ul, atom.Ol, atom.Dl, atom.Figure, atom.Form, atom.Fieldset, atom.Address, atom.Details, atom.Hr, atom.Title:
		return 2
	case atom.Br, atom.Li, atom.Tr, atom.Dt, atom.Dd, atom.Figcaption, atom.Caption, atom.Summary, atom.Option, atom.Legend:
		return 1
	}
	return 0
}

func (h *htmlProducer) next(out *sink) error {
	tt := h.z.Next()
	switch tt {
	case html.ErrorToken:
		err := h.z.Err()
		if errors.Is(err, html.ErrBufferExceeded) {
			return outcome.Reject(ReasonTooLarge, fmt.Errorf("an HTML token is larger than %d bytes", h.maxTok))
		}
		return err // io.EOF, or the source's error (the Reader prefers it)
	case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
		name, _ := h.z.TagName()
		a := atom.Lookup(name)
		h.tag(out, a, tt)
	case html.TextToken:
		if h.skip != 0 {
			return nil
		}
		text := h.z.Text() // entities decoded
		if h.pre > 0 {
			out.write(text)
			return nil
		}
		h.collapse(out, text)
	}
	return nil // comments and doctypes carry no text
}

func (h *htmlProducer) tag(out *sink, a atom.Atom, tt html.TokenType) {
	start := tt == html.StartTagToken
	if h.skip != 0 {
		switch {
		case a != h.skip:
		case start:
			h.skipN++
		case tt == html.EndTagToken:
			h.skipN--
			if h.skipN == 0 {
				h.skip = 0
			}
		}
		return
	}
	if hidden(a) && start {
		h.skip, h.skipN = a, 1
		return
	}
	if a == atom.Pre || a == atom.Textarea {
		switch tt {
		case html.StartTagToken:
			h.pre++
		case html.EndTagToken:
			h.pre = max(h.pre-1, 0)
		}
	}
	switch breakOf(a) {
	case 2:
		out.paragraph()
	case 1:
		out.line()
	default:
		if a == atom.Td || a == atom.Th {
			out.space()
		}
	}
}

// collapse writes text with each run of HTML whitespace as one space.
func (h *htmlProducer) collapse(out *sink, text []byte) {
	h.scratch = h.scratch[:0]
	space := false
	for _, c := range text {
		switch c {
		case ' ', '\t', '\n', '\r', '\f':
			space = true
		default:
			if space {
				h.scratch = append(h.scratch, ' ')
				space = false
			}
			h.scratch = append(h.scratch, c)
		}
	}
	if len(h.scratch) > 0 && (text[0] == ' ' || text[0] == '\t' || text[0] == '\n' || text[0] == '\r' || text[0] == '\f') {
		out.space()
		h.scratch = h.scratch[1:]
	}
	out.write(h.scratch)
	if space {
		out.space()
	}
}
