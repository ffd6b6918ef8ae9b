package batchfile

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// lineDecoder decodes an output line into a wireLine by walking its tokens:
// only the members offpath reads are decoded, the rest skipped (and still
// checked), with no reflection for the common shape. It yields exactly what
// decode(raw, &wireLine{}) yields, or errUnsure for whatever it does not
// handle itself (a name that matches a member only case-insensitively, a
// repeated member, a value of an unexpected kind, a syntax error), for which
// the caller decodes the line the general way.
type lineDecoder struct {
	dec *jsontext.Decoder
	br  bytes.Reader
	raw []byte
}

// errUnsure sends a line to the general decoder.
var errUnsure = errors.New("line needs the general decoder")

func newLineDecoder() *lineDecoder {
	d := &lineDecoder{}
	d.dec = jsontext.NewDecoder(&d.br, lineOptions)
	return d
}

// decodeLine decodes raw into w: the fast walk, or the general decoder for
// a line the walk is unsure of.
func (d *lineDecoder) decodeLine(raw []byte, w *wireLine) error {
	if d.walk(raw, w) == nil {
		return nil
	}
	*w = wireLine{}
	return decode(raw, w)
}

func (d *lineDecoder) walk(raw []byte, w *wireLine) error {
	d.raw = raw
	d.br.Reset(raw)
	d.dec.Reset(&d.br, lineOptions)
	defer func() { d.raw = nil; d.br.Reset(nil) }()
	if err := d.object(lineFields, func(i int) (err error) {
		switch i {
		case 0:
			w.CustomID, err = d.stringPtr()
		case 1:
			if d.null() {
				return nil
			}
			w.Response = new(wireResponse)
			return d.object(responseFields, w.Response.member(d))
		case 2:
			return d.general(&w.Error)
		}
		return err
	}); err != nil {
		return err
	}
	if _, err := d.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return errUnsure // more after the object
	}
	return nil
}

func (r *wireResponse) member(d *lineDecoder) func(int) error {
	return func(i int) (err error) {
		switch i {
		case 0:
			r.StatusCode, err = d.intPtr()
		case 1:
			return d.flex(&r.RequestID)
		case 2:
			if d.null() {
				return nil
			}
			r.Body = new(wireBody)
			return d.object(bodyFields, r.Body.member(d))
		}
		return err
	}
}

func (b *wireBody) member(d *lineDecoder) func(int) error {
	return func(i int) error {
		switch i {
		case 0:
			return d.choices(&b.Choices)
		case 1:
			if d.null() {
				return nil
			}
			b.Usage = new(wireUsage)
			return d.object(usageFields, b.Usage.member(d))
		case 2:
			return d.general(&b.Error)
		case 3:
			return d.general(&b.Status)
		case 4:
			return d.general(&b.Output)
		case 5:
			return d.value(&b.IncompleteDetails)
		case 6:
			return d.value(&b.ContentFilters)
		}
		return nil
	}
}

func (d *lineDecoder) choices(out *[]wireChoice) error {
	switch d.dec.PeekKind() {
	case 'n':
		_, err := d.dec.ReadToken()
		*out = nil
		return err
	case '[':
	default:
		return errUnsure
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return errUnsure
	}
	*out = []wireChoice{}
	for d.dec.PeekKind() != ']' {
		if d.dec.PeekKind() != '{' {
			return errUnsure
		}
		*out = append(*out, wireChoice{})
		c := &(*out)[len(*out)-1]
		if err := d.object(choiceFields, func(i int) error {
			switch i {
			case 0:
				return d.flex(&c.FinishReason)
			case 1:
				if d.dec.PeekKind() != '{' {
					return errUnsure
				}
				return d.object(messageFields, func(int) (err error) {
					c.Message.Content, err = d.stringPtr()
					return err
				})
			case 2:
				return d.value(&c.Filters)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return errUnsure
	}
	return nil
}

func (u *wireUsage) member(d *lineDecoder) func(int) error {
	return func(i int) (err error) {
		switch i {
		case 0:
			u.PromptTokens, err = d.intPtr64()
		case 1:
			u.CompletionTokens, err = d.intPtr64()
		case 2:
			u.InputTokens, err = d.intPtr64()
		case 3:
			u.OutputTokens, err = d.intPtr64()
		case 4:
			u.TotalTokens, err = d.intPtr64()
		case 5, 6:
			n, ok, err := d.detail(cachedFields)
			if ok && i == 5 {
				u.PromptDetails = &cachedDetail{n}
			} else if ok {
				u.InputDetails = &cachedDetail{n}
			}
			return err
		case 7, 8:
			n, ok, err := d.detail(reasoningFields)
			if ok && i == 7 {
				u.CompletionDetails = &reasoningDetail{n}
			} else if ok {
				u.OutputDetails = &reasoningDetail{n}
			}
			return err
		}
		return err
	}
}

// detail reads a usage detail: null (ok false), or an object of one
// count.
func (d *lineDecoder) detail(fs *fieldSet) (n *int64, ok bool, err error) {
	if d.null() {
		return nil, false, nil
	}
	err = d.object(fs, func(int) (err error) {
		n, err = d.intPtr64()
		return err
	})
	return n, true, err
}

// fieldSet is the member names of one wire type, as declared and folded
// as MatchCaseInsensitiveNames folds them.
type fieldSet struct{ names, folded []string }

func fields(names ...string) *fieldSet {
	fs := &fieldSet{names: names}
	for _, n := range names {
		fs.folded = append(fs.folded, strings.ToUpper(strings.NewReplacer("_", "", "-", "").Replace(n)))
	}
	return fs
}

var (
	lineFields      = fields("custom_id", "response", "error")
	responseFields  = fields("status_code", "request_id", "body")
	bodyFields      = fields("choices", "usage", "error", "status", "output", "incomplete_details", "content_filters")
	choiceFields    = fields("finish_reason", "message", "content_filter_results")
	messageFields   = fields("content")
	cachedFields    = fields("cached_tokens")
	reasoningFields = fields("reasoning_tokens")
	usageFields     = fields("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "total_tokens",
		"prompt_tokens_details", "input_tokens_details", "completion_tokens_details", "output_tokens_details")
)

// object reads an object, calling member with the index in fs of each
// member named exactly as declared, and skipping the members that match
// none of fs's names even case-insensitively.
func (d *lineDecoder) object(fs *fieldSet, member func(i int) error) error {
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return errUnsure
	}
	var seen uint32
	for {
		if d.dec.PeekKind() == '}' {
			if _, err := d.dec.ReadToken(); err != nil {
				return errUnsure
			}
			return nil
		}
		v, err := d.dec.ReadValue() // the name, quoted
		if err != nil || len(v) < 2 {
			return errUnsure
		}
		i, ok := fs.index(v[1 : len(v)-1])
		switch {
		case !ok:
			return errUnsure
		case i < 0:
			if err := d.dec.SkipValue(); err != nil {
				return errUnsure
			}
			continue
		case seen&(1<<i) != 0:
			return errUnsure // repeated: the general decoder merges repeats
		}
		seen |= 1 << i
		if err := member(i); err != nil {
			return errUnsure
		}
	}
}

// index is the index of the member name (as written, without its quotes)
// in fs, or -1 for a name that matches none of fs's even
// case-insensitively. ok is false for a name this cannot tell: one that
// matches only case-insensitively, or has escapes or other than ASCII.
func (fs *fieldSet) index(name []byte) (i int, ok bool) {
	for i, n := range fs.names {
		if string(name) == n {
			return i, true
		}
	}
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			return 0, false
		}
	}
	for _, f := range fs.folded {
		if foldedEqual(name, f) {
			return 0, false
		}
	}
	return -1, true
}

// foldedEqual reports whether an ASCII name folds to f: letters compared
// without case, '_' and '-' ignored.
func foldedEqual(name []byte, f string) bool {
	j := 0
	for _, c := range name {
		if c == '_' || c == '-' {
			continue
		}
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if j == len(f) || f[j] != c {
			return false
		}
		j++
	}
	return j == len(f)
}

// null consumes a null and reports whether there was one.
func (d *lineDecoder) null() bool {
	if d.dec.PeekKind() != 'n' {
		return false
	}
	_, err := d.dec.ReadToken()
	return err == nil
}

func (d *lineDecoder) stringPtr() (*string, error) {
	tok, err := d.dec.ReadToken()
	switch {
	case err != nil:
		return nil, err
	case tok.Kind() == 'n':
		return nil, nil
	case tok.Kind() != '"':
		return nil, errUnsure
	}
	s := tok.String()
	return &s, nil
}

func (d *lineDecoder) intPtr64() (*int64, error) {
	tok, err := d.dec.ReadToken()
	switch {
	case err != nil:
		return nil, err
	case tok.Kind() == 'n':
		return nil, nil
	case tok.Kind() != '0':
		return nil, errUnsure
	}
	n, err := tok.Int()
	if err != nil {
		return nil, errUnsure
	}
	return &n, nil
}

func (d *lineDecoder) intPtr() (*int, error) {
	n, err := d.intPtr64()
	if n == nil || err != nil {
		return nil, err
	}
	i := int(*n)
	return &i, nil
}

// flex reads a flexString.
func (d *lineDecoder) flex(f *flexString) error {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"', '0':
		*f = flexString(tok.String())
	case 'n':
		*f = ""
	default:
		return errUnsure
	}
	return nil
}

// value keeps a value as written, a slice of the line.
func (d *lineDecoder) value(v *jsontext.Value) error {
	val, err := d.dec.ReadValue()
	if err != nil {
		return err
	}
	end := int(d.dec.InputOffset())
	*v = jsontext.Value(d.raw[end-len(val) : end])
	return nil
}

// general decodes one member's value the general way; a null leaves v,
// a nil pointer or slice of a fresh line, as it is.
func (d *lineDecoder) general(v any) error {
	if d.null() {
		return nil
	}
	return json.UnmarshalDecode(d.dec, v, lineOptions)
}
