package tokens_test

import (
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/tokens"
)

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"one byte", "a", 1},
		{"four bytes", "abcd", 1},
		{"five bytes", "abcde", 2},
		{"multibyte runes count bytes", "été", 2}, // 5 bytes
		{"long", strings.Repeat("x", 4097), 1025},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tokens.Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %d, want %d", tt.in, got, tt.want)
			}
			if got, want := tokens.Text(tt.in), aoaisim.TextTokens(tt.in); got != want {
				t.Errorf("Text(%q) = %d, simulator says %d", tt.in, got, want)
			}
		})
	}
}

func TestPrompt_MatchesSimulator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		contents []string
	}{
		{"none", nil},
		{"one", []string{"hello"}},
		{"system and user", []string{"You summarise documents.", strings.Repeat("word ", 300)}},
		{"empty message", []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, want := tokens.Prompt(tt.contents...), aoaisim.PromptTokens(tt.contents, 0); got != want {
				t.Errorf("Prompt(%q) = %d, simulator says %d", tt.contents, got, want)
			}
		})
	}
}

func TestMaxBytes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 0, 1, 7, 512} {
		b := tokens.MaxBytes(n)
		if got := tokens.Bytes(b); got > max(n, 0) {
			t.Errorf("Bytes(MaxBytes(%d)) = %d, want <= %d", n, got, n)
		}
		if n > 0 && tokens.Bytes(b+1) <= n {
			t.Errorf("MaxBytes(%d) = %d is not the largest", n, b)
		}
	}
}
