package invoke

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Request is one decoded invocation envelope: {"Data": {...}, "Metadata": {...}}.
type Request struct {
	// InvocationID is the host's X-Azure-Functions-InvocationId.
	InvocationID string
	// Function is the function (folder) name the host invoked.
	Function string

	data []member
	meta []member
	// buf backs data and meta for typical envelopes without allocating.
	buf [24]member
}

// errBadEnvelope marks an envelope whose data the protocol layer could not
// decode: a wrong type, invalid base64, a missing binding. No retry can fix
// it, so it is a recorded rejection (see Mux), never a retry.
var errBadEnvelope = errors.New("invalid invocation envelope")

// errNotEnvelope marks a body that is no envelope at all: not JSON, or not
// a JSON object. The host never sends one; it is answered 400.
var errNotEnvelope = errors.New("not an invocation envelope")

// parseRequest decodes the envelope body. It validates the JSON once and
// keeps slices of body, so body must stay unchanged while the Request is
// used. A Data or Metadata that is not an object is an invalid envelope; the
// Request then holds the sections that could be read.
func parseRequest(r *Request, body []byte) error {
	if !json.Valid(body) {
		return fmt.Errorf("%w: body is not valid JSON", errNotEnvelope)
	}
	var top [4]member
	ms, err := members(top[:0], body)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotEnvelope, err)
	}
	all := r.buf[:0]
	all, dataErr := section(all, ms, "Data")
	r.data = all[:len(all):len(all)]
	all, metaErr := section(all, ms, "Metadata")
	r.meta = all[len(r.data):]
	return errors.Join(dataErr, metaErr)
}

// section appends the members of the top-level object called name to dst.
func section(dst, top []member, name string) ([]member, error) {
	raw, ok := lookup(top, name)
	if !ok || Value(raw).IsNull() {
		return dst, nil
	}
	if raw[0] != '{' {
		return dst, fmt.Errorf("%w: %s is %s, want an object", errBadEnvelope, name, kind(raw))
	}
	dst, err := members(dst, raw)
	if err != nil {
		return dst, fmt.Errorf("%w: %s: %v", errBadEnvelope, name, err)
	}
	return dst, nil
}

// Data returns the input binding called name (the trigger or an input).
func (r *Request) Data(name string) (Value, bool) {
	v, ok := lookup(r.data, name)
	return Value(v), ok
}

// Meta returns the trigger metadata entry called key, e.g. DeliveryCount,
// or a blob path token such as tenant.
func (r *Request) Meta(key string) (Value, bool) {
	v, ok := lookup(r.meta, key)
	return Value(v), ok
}

// metaString returns Meta(key) decoded as a string, "" when absent.
func (r *Request) metaString(key string) (string, error) {
	v, ok := r.Meta(key)
	if !ok {
		return "", nil
	}
	s, err := v.String()
	if err != nil {
		return "", fmt.Errorf("metadata %s: %w", key, err)
	}
	return s, nil
}

// trigger returns the Data entry of the trigger binding, which must exist.
func (r *Request) trigger(binding string) (Value, error) {
	v, ok := r.Data(binding)
	if !ok {
		return nil, fmt.Errorf("%w: Data has no %q binding", errBadEnvelope, binding)
	}
	return v, nil
}
