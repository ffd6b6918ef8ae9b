package aoaisim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"time"
)

// maxRequestBytes bounds synchronous request bodies.
const maxRequestBytes = 32 << 20

// chatRequest is the part of a chat completions body the simulator reads.
type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxTokens           *int          `json:"max_tokens"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	N                   *int          `json:"n"`
	Stream              bool          `json:"stream"`
}

type chatMessage struct {
	Role    string         `json:"role"`
	Content messageContent `json:"content"`
}

// messageContent is a message's content: a string, null, or an array of
// parts whose text is concatenated.
type messageContent struct {
	text   string
	images int
}

// UnmarshalJSON decodes the content. A string without escapes, by far the
// common case, is taken as is, without a second pass of the JSON decoder.
func (c *messageContent) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*c = messageContent{}
		return nil
	case len(b) >= 2 && b[0] == '"':
		if bytes.IndexByte(b, '\\') < 0 {
			c.text = string(b[1 : len(b)-1])
			return nil
		}
		if err := json.Unmarshal(b, &c.text); err != nil {
			return fmt.Errorf("decode content string: %w", err)
		}
		return nil
	}
	var parts []contentPart
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("content must be a string or an array of parts: %w", err)
	}
	var text []byte
	for _, p := range parts {
		switch p.Type {
		case "text":
			text = append(text, p.Text...)
		case "image_url":
			c.images++
		}
	}
	c.text = string(text)
	return nil
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// chatCall is a parsed, validated chat request.
type chatCall struct {
	model        string
	texts        []string
	source       string // the text the answer is made of: the last user message's
	promptTokens int
	maxTokens    int // 0: not set
	n            int
	seed         uint64
}

// parseChat decodes and validates a chat completions body.
func parseChat(body []byte) (*chatCall, *apiError) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, invalidRequest("", fmt.Sprintf("We could not parse the JSON body of your request: %v", err))
	}
	return req.call()
}

// call validates the request. The completion seed hashes the roles and texts
// of the messages, so the same conversation gets the same answer whether it
// comes synchronously or in a batch line.
func (req *chatRequest) call() (*chatCall, *apiError) {
	if req.Stream {
		return nil, invalidRequest("stream", "stream=true is not supported by the simulator.")
	}
	if len(req.Messages) == 0 {
		return nil, invalidRequest("messages", "'messages' is a required property and must contain at least one message.")
	}
	c := &chatCall{model: req.Model, n: 1, texts: make([]string, 0, len(req.Messages))}
	images := 0
	h := fnv.New64a()
	for _, m := range req.Messages {
		c.texts = append(c.texts, m.Content.text)
		if m.Role == "user" || c.source == "" {
			c.source = m.Content.text
		}
		images += m.Content.images
		_, _ = io.WriteString(h, m.Role)
		_, _ = h.Write([]byte{0})
		_, _ = io.WriteString(h, m.Content.text)
		_, _ = h.Write([]byte{0})
	}
	c.seed = h.Sum64()
	c.promptTokens = PromptTokens(c.texts, images)
	if req.N != nil {
		if *req.N < 1 || *req.N > 128 {
			return nil, invalidRequest("n", fmt.Sprintf("%d is not a valid value for 'n': it must be between 1 and 128.", *req.N))
		}
		c.n = *req.N
	}
	for _, p := range []struct {
		name string
		v    *int
	}{{"max_completion_tokens", req.MaxCompletionTokens}, {"max_tokens", req.MaxTokens}} {
		if p.v == nil {
			continue
		}
		if *p.v < 1 {
			return nil, invalidRequest(p.name, fmt.Sprintf("%d is less than the minimum of 1 - '%s'", *p.v, p.name))
		}
		if c.maxTokens == 0 {
			c.maxTokens = *p.v
		}
	}
	return c, nil
}

// charge is the TPM charge of a call: prompt + max tokens per choice, with
// defaultMax standing in for an absent max_tokens.
func (c *chatCall) charge(defaultMax int) int64 {
	completion := c.maxTokens
	if completion == 0 {
		completion = defaultMax
	}
	return int64(c.promptTokens + completion*c.n)
}

// handleChat serves POST .../chat/completions on both surfaces.
func (s *Server) handleChat(sf surface) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteChat)
		defer s.stats.opening()()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err != nil {
			writeError(w, invalidRequest("", "The request body could not be read or is too large."))
			return
		}
		call, apiErr := parseChat(body)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		name := r.PathValue("deployment")
		if !sf.classic {
			name = call.model
		}
		dep, apiErr := s.syncDeployment(name, false)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		if s.inject(r.Context(), w, RouteChat, name) {
			return
		}
		defer s.stats.answering()()
		if !s.admit(w, r, sf, dep, "ChatCompletions_Create", call.charge(s.cfg.DefaultMaxTokens)) {
			return
		}
		resp, apiErr := s.complete(dep, call)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}
}

// syncDeployment resolves a deployment for a synchronous call.
func (s *Server) syncDeployment(name string, embeddings bool) (*deploymentState, *apiError) {
	dep := s.deps[name]
	if dep == nil {
		return nil, errNoDeployment()
	}
	op := "chatCompletion"
	if embeddings {
		op = "embeddings"
	}
	if dep.cfg.Type == TypeGlobalBatch || dep.cfg.isEmbedding() != embeddings {
		return nil, errOperationNotSupported(op, dep.cfg.Model)
	}
	return dep, nil
}

// admit applies the deployment's rate limit. On refusal it writes the 429
// and returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, sf surface, dep *deploymentState, operation string, charge int64) bool {
	if dep.limiter == nil {
		dep.charged.Add(charge)
		return true
	}
	d := dep.limiter.admit(s.rateClock.Now(), charge)
	setRateHeaders(w.Header(), d)
	if speed := s.rateClock.Speed(); s.cfg.RealRetryAfter && speed > 0 {
		d.retryAfter = max(time.Duration(float64(d.retryAfter)/speed), time.Millisecond)
	}
	if !d.allowed {
		dep.throttled.Add(1)
		writeError(w, errRateLimited(w.Header(), operation, sf.apiVersion(r), d))
		return false
	}
	dep.charged.Add(charge)
	return true
}
