package batchfile

import (
	"bytes"
	"encoding/json"
	"testing"
)

// appendLine writes what encoding/json writes (HTML escaping off) for the
// same line, whatever the strings hold.
func TestAppendLine_AsEncodingJSON(t *testing.T) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type body struct {
		Model               string    `json:"model"`
		Messages            []message `json:"messages"`
		MaxTokens           int       `json:"max_tokens,omitempty"`
		MaxCompletionTokens int       `json:"max_completion_tokens,omitempty"`
		Temperature         *float64  `json:"temperature,omitempty"`
	}
	type line struct {
		CustomID string `json:"custom_id"`
		Method   string `json:"method"`
		URL      string `json:"url"`
		Body     body   `json:"body"`
	}
	tiny, big := 1e-7, 1e21
	for _, c := range []struct {
		content     string
		max, maxCpl int
		temp        *float64
	}{
		{"plain", 64, 0, nil},
		{"quotes \" and \\ backslashes, <html> & more", 0, 128, &tiny},
		{"controls \x00\x01\x1f\t\n\r\b\f and \x7f", 1, 2, &big},
		{"line separators \u2028 \u2029, emoji 🎉, accents éà", 0, 0, nil},
	} {
		it := Item{Tenant: "t", ItemID: "i", MaxTokens: c.max, MaxCompletionTokens: c.maxCpl, Temperature: c.temp,
			Messages: []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: c.content}}}
		got, err := appendLine(nil, "job1.0.0.AAAAAAAA", DefaultURL, "gpt-4o-mini-batch", &it)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(line{CustomID: "job1.0.0.AAAAAAAA", Method: "POST", URL: DefaultURL, Body: body{Model: "gpt-4o-mini-batch",
			Messages: []message{{"system", "Be brief."}, {"user", c.content}}, MaxTokens: c.max, MaxCompletionTokens: c.maxCpl, Temperature: c.temp}}); err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Errorf("appendLine =\n%s\nencoding/json =\n%s", got, want.String())
		}
	}
}
