package invoke

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Blob is a blobTrigger invocation. What locates the blob (its container and
// name) is what the envelope is trusted for; everything else it says about
// the blob is advisory: the shape of Properties changes with the Storage
// extension's version, a deferred-binding descriptor describes itself rather
// than the blob, and the blob may have changed since the event. A function
// that acts on the blob's ETag, size or content type reads them from storage.
type Blob struct {
	// Content is the blob's bytes when the host inlined them (dataType
	// binary or string), nil otherwise: deferred binding
	// (supportsDeferredBinding) or an Event Grid event in Data.
	Content  []byte
	Deferred bool
	// URL is the blob's URL as the host or the event gave it.
	URL string
	// Container and Name locate the blob: Name is its name in Container,
	// decoded ("contoso/manual v2.pdf").
	Container string
	Name      string
	// ETag, ContentType and Length are advisory (see Blob): empty or zero
	// when the envelope does not say, or says it in a shape not understood.
	ETag        string
	ContentType string
	Length      int64
	// LastModified and Created are advisory too; zero means unknown or
	// "never" (0001-01-01T00:00:00+00:00).
	LastModified time.Time
	Created      time.Time
	// Metadata is the blob's user metadata as the envelope has it, keys as
	// sent.
	Metadata map[string]string
}

// Blob decodes the blob trigger bound as binding. Data.<binding> may be
// the content (base64 or a double-encoded string), a deferred-binding
// descriptor, an Event Grid or CloudEvents BlobCreated event (or an array of
// one), or null. The blob is located by the first of Metadata.BlobTrigger
// ("container/name"), Metadata.Uri, the event's subject or url, and the
// {name} path token with the trigger's container unknown. Properties and
// Metadata never fail the decoding: what is not understood is left empty.
// The error is an invalid envelope when Data.<binding> is missing, of the
// wrong type, not decodable, or when nothing locates the blob; the Blob
// returned with it holds what could be read.
func (r *Request) Blob(binding string) (Blob, error) {
	var b Blob
	b.URL = r.metaText("Uri")
	if c, n, ok := strings.Cut(r.metaText("BlobTrigger"), "/"); ok && c != "" && n != "" {
		b.Container, b.Name = c, n
	} else if c, n, ok := splitBlobURL(b.URL); ok {
		b.Container, b.Name = c, n
	}
	if v, ok := r.Meta("Properties"); ok {
		b.properties(v)
	}
	if v, ok := r.Meta("Metadata"); ok {
		b.Metadata = textMap(v)
	}

	v, err := r.trigger(binding)
	if err != nil {
		b.locateByToken(r)
		return b, err
	}
	switch {
	case v.IsNull():
		b.Deferred = true
	case v[0] == '{' || v[0] == '[':
		b.Deferred = true
		if err := b.event(v); err != nil {
			b.locateByToken(r)
			return b, fmt.Errorf("%w: %s: %v", errBadEnvelope, binding, err)
		}
		b.descriptor(v)
	case v[0] == '"':
		if b.Content, err = v.Bytes(); err != nil {
			b.locateByToken(r)
			return b, fmt.Errorf("%w: %s: %v", errBadEnvelope, binding, err)
		}
		if b.Length == 0 {
			b.Length = int64(len(b.Content))
		}
	default:
		b.locateByToken(r)
		return b, fmt.Errorf("%w: %s is %s, want the content, a descriptor or an event", errBadEnvelope, binding, kind(v))
	}
	if b.locateByToken(r); b.Name == "" {
		return b, fmt.Errorf("%w: nothing locates the blob (no Metadata.BlobTrigger, Uri, event subject or name)", errBadEnvelope)
	}
	return b, nil
}

// locateByToken falls back on the {name} path token when nothing better
// located the blob.
func (b *Blob) locateByToken(r *Request) {
	if b.Name == "" {
		b.Name = r.metaText("name")
	}
}

// properties reads what it understands of a BlobProperties object: the
// older SDK's Length, ContentMD5 and Created and a quoted ETag string, or
// the 5.x extension's ContentLength, ContentHash and CreatedOn with an ETag
// that may serialise as an empty object; enums as numbers or strings.
func (b *Blob) properties(v Value) {
	ms := objectMembers(v)
	if etag, ok := lookup(ms, "ETag"); ok && len(etag) > 0 && etag[0] == '"' {
		s, _ := Value(etag).String()
		b.ETag = strings.Trim(s, `"`)
	}
	b.ContentType = text(ms, "ContentType")
	for _, key := range []string{"ContentLength", "Length"} {
		if raw, ok := lookup(ms, key); ok {
			if n, err := Value(raw).Int(); err == nil && n > 0 {
				b.Length = n
				break
			}
		}
	}
	b.LastModified = when(ms, "LastModified")
	if b.Created = when(ms, "CreatedOn"); b.Created.IsZero() {
		b.Created = when(ms, "Created")
	}
}

// descriptor reads a deferred-binding descriptor's Content.Length and
// Content.MediaType. The descriptor's own ContentType describes the
// descriptor, not the blob, and is not read.
func (b *Blob) descriptor(v Value) {
	content, ok := lookup(objectMembers(v), "Content")
	if !ok {
		return
	}
	ms := objectMembers(content)
	if raw, ok := lookup(ms, "Length"); ok && b.Length == 0 {
		if n, err := Value(raw).Int(); err == nil && n > 0 {
			b.Length = n
		}
	}
	if b.ContentType == "" {
		b.ContentType = text(ms, "MediaType")
	}
}

// event reads a Storage BlobCreated event, in the Event Grid schema
// (subject, data.url) or CloudEvents (subject, data.url), alone or as an
// array of one. An object that is no event is left alone (a descriptor, or
// an unknown shape); an array of anything but one object is an error.
func (b *Blob) event(v Value) error {
	if v[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return err
		}
		if len(items) != 1 || len(items[0]) == 0 || items[0][0] != '{' {
			return fmt.Errorf("an array of %d values, want one event", len(items))
		}
		v = Value(items[0])
	}
	ms := objectMembers(v)
	data, ok := lookup(ms, "data")
	if !ok {
		return nil
	}
	d := objectMembers(data)
	if b.URL == "" {
		b.URL = text(d, "url")
	}
	if b.Name == "" {
		if c, n, ok := splitSubject(text(ms, "subject")); ok {
			b.Container, b.Name = c, n
		} else if c, n, ok := splitBlobURL(text(d, "url")); ok {
			b.Container, b.Name = c, n
		}
	}
	if b.ETag == "" {
		b.ETag = strings.Trim(text(d, "eTag"), `"`)
	}
	if b.ContentType == "" {
		b.ContentType = text(d, "contentType")
	}
	if raw, ok := lookup(d, "contentLength"); ok && b.Length == 0 {
		if n, err := Value(raw).Int(); err == nil && n > 0 {
			b.Length = n
		}
	}
	return nil
}

// splitSubject splits an event subject
// "/blobServices/default/containers/{container}/blobs/{name}".
func splitSubject(s string) (container, name string, ok bool) {
	rest, ok := strings.CutPrefix(s, "/blobServices/default/containers/")
	if !ok {
		return "", "", false
	}
	container, name, ok = strings.Cut(rest, "/blobs/")
	return container, name, ok && container != "" && name != ""
}

// splitBlobURL takes the container and the decoded name from a blob URL,
// host-style (https://{account}.blob.core.windows.net/{container}/{name}) or
// path-style, where the account is the first segment (Azurite:
// http://127.0.0.1:10000/{account}/{container}/{name}).
func splitBlobURL(raw string) (container, name string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	p := strings.TrimPrefix(u.Path, "/")
	if host := u.Hostname(); net.ParseIP(host) != nil || !strings.Contains(host, ".") {
		_, p, _ = strings.Cut(p, "/")
	}
	container, name, ok = strings.Cut(p, "/")
	return container, name, ok && container != "" && name != ""
}

// metaText is Meta(key) as a string, "" when absent or not a string.
func (r *Request) metaText(key string) string {
	v, _ := r.Meta(key)
	s, _ := v.String()
	return s
}

// objectMembers lists the members of an object value, unwrapping one that was sent
// as a JSON string; nothing for anything else.
func objectMembers(v Value) []member {
	if len(v) > 0 && v[0] == '"' {
		s, err := v.String()
		if err != nil || !json.Valid([]byte(s)) {
			return nil
		}
		v = Value(s)
	}
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	ms, err := members(nil, v)
	if err != nil {
		return nil
	}
	return ms
}

// text is a member's string value, "" when absent or not text.
func text(ms []member, key string) string {
	raw, ok := lookup(ms, key)
	if !ok {
		return ""
	}
	s, err := Value(raw).String()
	if err != nil {
		return ""
	}
	return s
}

// when is a member's timestamp, zero when absent, "never" or unreadable.
func when(ms []member, key string) time.Time {
	raw, ok := lookup(ms, key)
	if !ok {
		return time.Time{}
	}
	t, _ := Value(raw).Time()
	return t
}

// textMap reads a string dictionary, skipping values that are not text.
func textMap(v Value) map[string]string {
	ms := objectMembers(v)
	if ms == nil && !bytes.Equal(bytes.Join(bytes.Fields(v), nil), []byte("{}")) {
		return nil
	}
	m := make(map[string]string, len(ms))
	for _, e := range ms {
		if s, err := Value(e.val).String(); err == nil {
			m[string(e.key)] = s
		}
	}
	return m
}
