package invoke

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/offpath/offpath/internal/jsonstr"
)

// Result is what a function hands back: values for its output bindings, keyed
// by exact binding name (the host looks them up case-sensitively), and an
// optional return value for a $return binding.
type Result struct {
	Outputs     map[string]Output
	ReturnValue Output
}

// Output is a value for one output binding, already in a form the host cannot
// misread. Build one with Bytes, Text, Object or Response.
type Output interface {
	appendJSON(dst []byte) ([]byte, error)
}

// Bytes sends b as exactly one message or blob: base64, which the host decodes
// back to these bytes on any binding without dataType binary (offpath's
// output bindings never set it). Base64 is never mistaken for a JSON array,
// so a body that is itself an array stays one message.
func Bytes(b []byte) Output { return rawBytes(b) }

// Text sends s as exactly one message or blob, byte for byte. A bare string
// such as "done" would be base64-decoded by the host into garbage; Text
// avoids that by sending it as Bytes.
func Text(s string) Output { return rawBytes(s) }

type rawBytes []byte

func (b rawBytes) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"'), nil
}

// Object sends v as a JSON object (a table row, a typed message): the host
// passes objects through untouched. v must marshal to a JSON object; arrays
// and scalars are refused because the host would split or decode them.
func Object(v any) Output { return object{v} }

type object struct{ v any }

func (o object) appendJSON(dst []byte) ([]byte, error) {
	b, err := json.Marshal(o.v)
	if err != nil {
		return dst, fmt.Errorf("marshal output: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		return dst, fmt.Errorf("output must be a JSON object, got %s", kind(b))
	}
	return append(dst, b...), nil
}

// HTTPResponse is the `res` output of an HTTP function in envelope mode. The
// host writes Body as-is; it does not base64-decode it, so binary responses
// need forwarding mode.
type HTTPResponse struct {
	StatusCode int
	Headers    map[string]string
	Body       string
}

// Response sends r as the host's `res` object ({"statusCode", "headers", "body"}).
func Response(r HTTPResponse) Output { return r }

func (r HTTPResponse) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"statusCode":`...)
	dst = strconv.AppendInt(dst, int64(r.StatusCode), 10)
	dst = append(dst, `,"headers":{`...)
	first := true
	for k, v := range r.Headers {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonstr.Append(dst, k)
		dst = append(dst, ':')
		dst = jsonstr.Append(dst, v)
	}
	dst = append(dst, `},"body":`...)
	return append(jsonstr.Append(dst, r.Body), '}'), nil
}

// appendReply encodes the host's reply object. It never produces null or an
// empty body: a reply without outputs is {"Outputs":{},"Logs":[],"ReturnValue":null}.
func appendReply(dst []byte, res Result, logs []string) ([]byte, error) {
	dst = append(dst, `{"Outputs":{`...)
	first := true
	var err error
	for name, out := range res.Outputs {
		if out == nil {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonstr.Append(dst, name)
		dst = append(dst, ':')
		if dst, err = out.appendJSON(dst); err != nil {
			return dst, fmt.Errorf("output %q: %w", name, err)
		}
	}
	dst = append(dst, `},"Logs":[`...)
	for i, l := range logs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, l)
	}
	dst = append(dst, `],"ReturnValue":`...)
	if res.ReturnValue == nil {
		return append(dst, "null}"...), nil
	}
	if dst, err = res.ReturnValue.appendJSON(dst); err != nil {
		return dst, fmt.Errorf("return value: %w", err)
	}
	return append(dst, '}'), nil
}
