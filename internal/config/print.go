package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"strings"
)

// Secret is a setting that grants access (a key, a connection string, a
// URL carrying a token). It prints, marshals and formats as Redacted when
// set, so that no log line or printed configuration shows it; Reveal is
// its value, for the client that needs it.
type Secret string

// Redacted is how a secret that is set prints.
const Redacted = "<redacted>"

// Reveal is the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String is Redacted when s is set, "" otherwise.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString keeps %#v from showing the value.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.String()) }

// MarshalText is the redacted form.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Print writes c as indented JSON with every secret redacted, durations as
// Go durations ("1m0s") and levels by name: the effective configuration,
// as the handler runs with it.
func (c Handler) Print(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(printable(reflect.ValueOf(c)))
}

var stringerType = reflect.TypeFor[fmt.Stringer]()

// printable is v as JSON values: structs as objects keyed by their json
// names (fields tagged "-" left out, and empty omitempty ones), durations,
// levels, secrets and other Stringers by their String, a URL's query
// redacted when it holds a shared access signature.
func printable(v reflect.Value) any {
	switch {
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return printable(v.Elem())
	case v.Type().Implements(stringerType): // durations, levels, secrets
		return v.Interface().(fmt.Stringer).String()
	case v.Kind() == reflect.Struct:
		out := map[string]any{}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if strings.Contains(opts, "omitempty") && v.Field(i).IsZero() {
				continue
			}
			out[cmp.Or(name, f.Name)] = printable(v.Field(i))
		}
		return out
	case v.Kind() == reflect.Map:
		out := map[string]any{}
		for it := v.MapRange(); it.Next(); {
			out[fmt.Sprint(it.Key().Interface())] = printable(it.Value())
		}
		return out
	case v.Kind() == reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = printable(v.Index(i))
		}
		return out
	case v.Kind() == reflect.String:
		return redactSAS(v.String())
	}
	return v.Interface()
}

// redactSAS hides the query of a URL that carries a shared access
// signature (its sig parameter).
func redactSAS(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.RawQuery == "" || !u.Query().Has("sig") {
		return s
	}
	u.RawQuery = Redacted
	return u.String()
}
