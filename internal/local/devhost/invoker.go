package devhost

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// hostVersion is what the dev host announces in X-Azure-Functions-HostVersion.
const hostVersion = "4.1044.0-offpath-devhost"

// invoker sends envelopes to the handler and reads replies by the host's
// rules.
type invoker struct {
	worker  *worker
	client  *http.Client
	timeout time.Duration
	logger  zerolog.Logger
}

// reply is a successful reply: the handler answered 2xx with a JSON object.
type reply struct {
	Outputs     map[string]json.RawMessage
	Logs        []string
	ReturnValue json.RawMessage
}

// invoke POSTs env to /{function} and returns the reply, or an error if the
// host would have failed the invocation.
func (iv *invoker) invoke(ctx context.Context, id, function string, env envelope) (*reply, error) {
	if iv.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, iv.timeout)
		defer cancel()
	}
	if err := iv.worker.waitReady(ctx); err != nil {
		return nil, err
	}
	body, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, iv.worker.baseURL()+"/"+function, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build invocation: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	setInvocationHeaders(req.Header, id)
	res, err := iv.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("timeout value of %v exceeded by function %s", iv.timeout, function)
		}
		return nil, fmt.Errorf("call handler: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	return parseReply(res.StatusCode, res.Header.Get("Content-Type"), raw)
}

func setInvocationHeaders(h http.Header, id string) {
	h.Set("X-Azure-Functions-InvocationId", id)
	h.Set("X-Azure-Functions-HostVersion", hostVersion)
	h.Set("User-Agent", "Azure-Functions-Host/"+hostVersion)
}

// parseReply applies the host's reply rules: 2xx only, a JSON media type
// (Go's sniffed text/plain fails), a non-null JSON object; Outputs, Logs and
// ReturnValue matched case-insensitively.
func parseReply(status int, contentType string, body []byte) (*reply, error) {
	if status < 200 || status > 299 {
		return nil, fmt.Errorf("handler replied %d: %s", status, clip(body))
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/json" && mt != "text/json" {
		return nil, fmt.Errorf("UnsupportedMediaTypeException: reply content type %q is not application/json (set it explicitly: Go sniffs JSON as text/plain)", contentType)
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, errors.New("reply body is empty or null: the real host never completes such an invocation and waits until functionTimeout; always send at least {}")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &top); err != nil {
		return nil, fmt.Errorf("reply is not a JSON object: %w: %s", err, clip(body))
	}
	r := &reply{}
	for k, v := range top {
		var err error
		switch strings.ToLower(k) {
		case "outputs":
			if string(v) != "null" {
				err = json.Unmarshal(v, &r.Outputs)
			}
		case "logs":
			if string(v) != "null" {
				err = json.Unmarshal(v, &r.Logs)
			}
		case "returnvalue":
			r.ReturnValue = v
		}
		if err != nil {
			return nil, fmt.Errorf("reply %s: %w", k, err)
		}
	}
	return r, nil
}

// outputItem is one value the host hands an output binding: bytes, or a
// JSON token (string, object, array, number) left as it was.
type outputItem struct {
	bytes   []byte
	isBytes bool
	token   json.RawMessage
}

// outputItems converts a binding's output value as the host does:
// GetBindingValue base64-decodes any string that is valid base64 unless the
// binding has dataType binary; collectors (queue, serviceBus) then split a
// JSON array, or a string holding one, into several messages.
func outputItems(b Binding, raw json.RawMessage, collector bool) []outputItem {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	isString := raw[0] == '"' && json.Unmarshal(raw, &s) == nil
	if isString && !strings.EqualFold(b.DataType, "binary") {
		if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
			return []outputItem{{bytes: dec, isBytes: true}}
		}
	}
	if !collector {
		return []outputItem{{token: raw}}
	}
	arr := raw
	if isString {
		arr = []byte(strings.TrimSpace(s))
	}
	var elems []json.RawMessage
	if len(arr) > 0 && arr[0] == '[' && json.Unmarshal(arr, &elems) == nil {
		items := make([]outputItem, 0, len(elems))
		for _, e := range elems {
			items = append(items, outputItem{token: e})
		}
		return items
	}
	return []outputItem{{token: raw}}
}

// messageBody is what a collector of strings writes for an item: bytes as
// they are, a string's text, and an object the way JObject.ToString() does
// (indented), which is why offpath sends bytes.
func (it outputItem) messageBody() []byte {
	if it.isBytes {
		return it.bytes
	}
	var s string
	if json.Unmarshal(it.token, &s) == nil {
		return []byte(s)
	}
	if it.token[0] == '{' || it.token[0] == '[' {
		var buf bytes.Buffer
		if json.Indent(&buf, it.token, "", "  ") == nil {
			return buf.Bytes()
		}
	}
	return it.token
}

// blobBody is what a blob output writes: bytes raw, a string as UTF-8, any
// other token as compact JSON.
func (it outputItem) blobBody() []byte {
	if it.isBytes {
		return it.bytes
	}
	var s string
	if json.Unmarshal(it.token, &s) == nil {
		return []byte(s)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, it.token) == nil {
		return buf.Bytes()
	}
	return it.token
}

func clip(b []byte) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
