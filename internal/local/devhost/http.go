package devhost

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveHTTP serves HTTP functions, the admin API and the dev host's own
// endpoints on the front address until ctx is done.
func (h *Host) serveHTTP(ctx context.Context) error {
	// The whole request, body included, is bounded; writing is not: an
	// HTTP function answers when it answers, within functionTimeout.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: min(10*time.Second, h.opts.RequestReadTimeout),
		ReadTimeout: h.opts.RequestReadTimeout, IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(h.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve HTTP: %w", err)
	}
	return nil
}

// ServeHTTP routes a caller's request.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/admin/"):
		h.serveAdmin(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/devhost/"):
		h.serveDevhost(w, r)
		return
	case r.URL.Path == "/runtime/webhooks/blobs":
		h.serveBlobWebhook(w, r)
		return
	}
	for _, fn := range h.app.Functions {
		t := fn.Trigger()
		if t.Type != "httpTrigger" {
			continue
		}
		rt := newRoute(h.app.Host.RoutePrefix, cmpRoute(t.Route, fn.Name), t.Methods)
		params, ok := rt.match(r.URL.Path)
		if !ok {
			continue
		}
		if !rt.allowsMethod(r.Method) {
			continue
		}
		if !h.keys.allows(r, cmpRoute(t.AuthLevel, "function")) {
			w.WriteHeader(http.StatusUnauthorized) // the host answers 401 with no body
			return
		}
		if r.ContentLength > h.app.MaxRequestBody {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, h.app.MaxRequestBody)
		if fn.forwarded(h.app.Host) {
			h.forward(w, r, fn)
		} else {
			h.envelopeHTTP(w, r, fn, params)
		}
		return
	}
	http.NotFound(w, r)
}

func cmpRoute(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// forward sends the caller's request to the handler as the host does with
// enableForwardingHttpRequest: same method, path (route prefix included),
// query and headers; the body only when Content-Length > 0; no redirects
// followed; the response copied back buffered.
func (h *Host) forward(w http.ResponseWriter, r *http.Request, fn *Function) {
	id, start := newID(), time.Now()
	ctx := r.Context()
	if h.invoker.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.invoker.timeout)
		defer cancel()
	}
	status, err := h.forwardOnce(ctx, w, r, id)
	ev, outcome := h.logger.Info(), "succeeded"
	if err != nil {
		ev, outcome = h.logger.Warn().Err(err), "failed"
		http.Error(w, "function invocation failed", http.StatusInternalServerError)
		status = http.StatusInternalServerError
	}
	ev.Str("function", fn.Name).Str("trigger", "httpTrigger").Str("mode", "forwarded").Str("invocation_id", id).
		Str("method", r.Method).Str("path", r.URL.Path).Int("status", status).
		Dur("duration_ms", time.Since(start)).Str("outcome", outcome).Msg("invocation")
}

func (h *Host) forwardOnce(ctx context.Context, w http.ResponseWriter, r *http.Request, id string) (int, error) {
	if err := h.worker.waitReady(ctx); err != nil {
		return 0, err
	}
	var body io.Reader
	if r.ContentLength > 0 {
		body = r.Body
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, h.worker.baseURL()+r.URL.RequestURI(), body)
	if err != nil {
		return 0, fmt.Errorf("build forwarded request: %w", err)
	}
	for k, vs := range r.Header {
		out.Header[k] = append([]string(nil), vs...)
	}
	if r.ContentLength > 0 {
		out.ContentLength = r.ContentLength
	}
	setInvocationHeaders(out.Header, id)
	res, err := h.invoker.client.Do(out)
	if err != nil {
		return 0, fmt.Errorf("forward to handler: %w", err)
	}
	defer res.Body.Close()
	buf, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, fmt.Errorf("read handler response: %w", err)
	}
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(buf)
	return res.StatusCode, nil
}

// envelopeHTTP invokes an HTTP function in envelope mode and writes
// its `res` output binding as the response. A failed invocation is a 500
// to the caller.
func (h *Host) envelopeHTTP(w http.ResponseWriter, r *http.Request, fn *Function, params map[string]*string) {
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	case err != nil: // the caller stopped sending, or took too long
		http.Error(w, "the request body could not be read", http.StatusBadRequest)
		return
	}
	env := newEnvelope(fn.Name, h.opts.Now())
	query, flatQuery := map[string]string{}, map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
		flatQuery[k] = query[k]
	}
	headers, flatHeaders := map[string][]string{}, map[string]string{}
	for k, vs := range r.Header {
		headers[k] = vs
		flatHeaders[k] = strings.Join(vs, ",")
	}
	req := map[string]any{
		"Url": "http://" + r.Host + r.URL.RequestURI(), "Method": r.Method,
		"Query": query, "Headers": headers,
		"Identities": []map[string]any{{"AuthenticationType": nil, "IsAuthenticated": false, "Claims": []any{}, "Name": nil}},
	}
	if len(params) > 0 {
		req["Params"] = params
	}
	if len(body) > 0 {
		ct := strings.ToLower(r.Header.Get("Content-Type"))
		if strings.HasPrefix(ct, "application/octet-stream") || strings.HasPrefix(ct, "multipart/") {
			req["Body"] = base64.StdEncoding.EncodeToString(body)
		} else {
			req["Body"] = string(body)
		}
	}
	t := fn.Trigger()
	env.Data[t.Name] = mustJSON(req)
	env.Metadata["Query"] = mustJSON(flatQuery)
	env.Metadata["Headers"] = mustJSON(flatHeaders)
	for k, v := range params {
		if v != nil {
			env.Metadata[k] = hostString(*v)
		}
	}
	rep, err := h.execute(r.Context(), fn, env, nil, Event{})
	if err != nil {
		http.Error(w, "function invocation failed", http.StatusInternalServerError)
		return
	}
	if err := writeRes(w, fn, rep); err != nil {
		h.logger.Warn().Err(err).Str("function", fn.Name).Msg("http output unusable")
		http.Error(w, "function invocation failed", http.StatusInternalServerError)
	}
}

// writeRes writes the http output binding's value as the host's HttpBinding
// does: a JSON object with statusCode (number or numeric string), headers
// (scalars) and body (a string as-is, anything else as indented JSON).
func writeRes(w http.ResponseWriter, fn *Function, rep *reply) error {
	var raw json.RawMessage
	for _, b := range fn.Outputs() {
		if strings.EqualFold(b.Type, "http") {
			raw = rep.Outputs[b.Name]
			if b.Name == "$return" {
				raw = rep.ReturnValue
			}
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("res must be a JSON object: %w", err)
	}
	field := func(name string) json.RawMessage {
		for k, v := range res {
			if strings.EqualFold(k, name) {
				return v
			}
		}
		return nil
	}
	status := http.StatusOK
	if sc := field("statusCode"); len(sc) > 0 {
		var s string
		text := string(sc)
		if json.Unmarshal(sc, &s) == nil {
			text = s
		}
		n, err := strconv.Atoi(text)
		if err != nil {
			return fmt.Errorf("res statusCode %s is not a number", sc)
		}
		status = n
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var hdrs map[string]json.RawMessage
	if hv := field("headers"); len(hv) > 0 && json.Unmarshal(hv, &hdrs) == nil {
		for k, v := range hdrs {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			w.Header().Set(k, s)
		}
	}
	var out []byte
	if bv := field("body"); len(bv) > 0 && string(bv) != "null" {
		var s string
		if json.Unmarshal(bv, &s) == nil {
			out = []byte(s)
		} else {
			var buf bytes.Buffer
			_ = json.Indent(&buf, bv, "", "  ")
			out = buf.Bytes()
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return nil
}
