package azopenai

import (
	"slices"
	"testing"
)

func TestParseSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reply      string
		input      string
		summary    string
		keywords   []string
		structured bool
	}{
		{"json", `{"summary":"A report.","keywords":["sales","Q1"]}`, "", "A report.", []string{"sales", "Q1"}, true},
		{"fenced", "```json\n{\"summary\": \"A report.\", \"keywords\": [\"a\"]}\n```", "", "A report.", []string{"a"}, true},
		{"chatter around", `Here you go: {"summary":"S.","keywords":"x, y ,x"} Hope it helps.`, "", "S.", []string{"x", "y"}, true},
		{"duplicate and empty keywords", `{"summary":"S.","keywords":["A","a"," ","b"]}`, "", "S.", []string{"A", "b"}, true},
		{"too many keywords", `{"summary":"S.","keywords":["1","2","3","4"]}`, "", "S.", []string{"1", "2", "3"}, true},
		{"empty summary falls back", `{"summary":"","keywords":["a"]}`, "doc text text", `{"summary":"","keywords":["a"]}`, []string{"text"}, false},
		{"keywords line", "The report covers sales.\nKeywords: sales, report", "ignored input", "The report covers sales.", []string{"sales", "report"}, false},
		{"plain text", "The model's words.", "Queues carry claims. Queues scale. Tokens cost; the queues.", "The model's words.", []string{"queues", "carry", "claims"}, false},
		{"truncated json", `{"summary":"A rep`, "Über größe größe", `{"summary":"A rep`, []string{"größe", "über"}, false},
		{"empty", "", "", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, k, structured := parseSummary(tt.reply, tt.input, 3)
			if s != tt.summary || !slices.Equal(k, tt.keywords) || structured != tt.structured {
				t.Errorf("parseSummary(%q) = %q, %q, %v; want %q, %q, %v", tt.reply, s, k, structured, tt.summary, tt.keywords, tt.structured)
			}
		})
	}
}
