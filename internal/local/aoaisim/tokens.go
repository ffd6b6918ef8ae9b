package aoaisim

import (
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// Token approximation. The simulator has no tokenizer; it counts tokens with a
// documented rule so that callers can predict usage exactly:
//
//   - text:     ceil(len(UTF-8 bytes) / 4)      ([TextTokens])
//   - message:  MessageOverheadTokens + text tokens of its content parts
//     (+ ImagePartTokens per image part)
//   - prompt:   sum of messages + ReplyPrimingTokens            ([PromptTokens])
//   - embedding input: text tokens of each string (or the length of a token
//     array), no overhead
//   - completion: text tokens of the generated text
//
// The same rule is used by synchronous chat and by batch lines.
const (
	// CharsPerToken is the divisor of the approximation.
	CharsPerToken = 4
	// MessageOverheadTokens is added per chat message (role and framing).
	MessageOverheadTokens = 4
	// ReplyPrimingTokens is added once per chat prompt.
	ReplyPrimingTokens = 3
	// ImagePartTokens is charged per image_url content part.
	ImagePartTokens = 85
)

// TextTokens approximates the token count of text: ceil(bytes / 4).
func TextTokens(text string) int {
	return (len(text) + CharsPerToken - 1) / CharsPerToken
}

// PromptTokens approximates the prompt tokens of messages, given the text of
// each message's content (parts concatenated) and its number of image parts.
func PromptTokens(texts []string, images int) int {
	n := ReplyPrimingTokens + images*ImagePartTokens
	for _, t := range texts {
		n += MessageOverheadTokens + TextTokens(t)
	}
	return n
}

// SimulatedPrefix starts every completion, so that nobody mistakes the
// simulator's answers for a model's.
const SimulatedPrefix = "(simulated) "

// words fill the answer to a prompt that has no sentence of its own.
const wordList = "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will more its about up out who them some could what into time only new other than then now look made way any like our over such also back most after first well even work because good give day use these year many"

// completer generates deterministic completion text.
type completer struct {
	words []string
}

func newCompleter() *completer { return &completer{words: strings.Fields(wordList)} }

// seed hashes the prompt into a 64-bit seed.
func seedOf(parts ...[]byte) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write(p)
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// complete returns the text for choice index of a prompt with the given seed,
// made of source's own sentences (the prompt's last user message), in their
// order from one the seed picks, after [SimulatedPrefix]: it reads like an
// answer about the prompt and says what it is. Its natural length is at most
// 8 to 48 tokens (derived from the seed), shorter when the source runs out of
// sentences; limit (when positive) cuts it, and truncated reports whether the
// cut shortened it.
func (c *completer) complete(seed uint64, index int, limit int, source string) (text string, truncated bool) {
	rng := rand.New(rand.NewPCG(seed, uint64(index)+0x9e3779b97f4a7c15))
	want := (8 + rng.IntN(41)) * CharsPerToken
	sentences := splitSentences(source)
	if len(sentences) == 0 {
		s := make([]string, 6+rng.IntN(6))
		for i := range s {
			s[i] = c.words[rng.IntN(len(c.words))]
		}
		sentences = []string{strings.Join(s, " ")}
	}
	var b strings.Builder
	b.WriteString(SimulatedPrefix)
	first := rng.IntN(len(sentences))
	for i := range sentences {
		s := sentences[(first+i)%len(sentences)]
		sep := ""
		if i > 0 {
			sep = " "
		}
		if b.Len()+len(sep)+len(s) <= want {
			b.WriteString(sep + s)
			continue
		}
		if i == 0 { // the first is too long: its words, as many as fit
			b.WriteString(cutWords(s, want-b.Len()-1) + ".")
		}
		break
	}
	text = b.String()
	if limit > 0 && TextTokens(text) > limit {
		return cutWords(text, limit*CharsPerToken), true
	}
	return text, false
}

// splitSentences cuts text into sentences ending in . ! or ? before a
// space, or at a blank line (a paragraph, a heading); line breaks within a
// paragraph are spaces, spaces are collapsed, Markdown's line markers
// (# - * >) dropped, and a full stop added where a sentence has none.
func splitSentences(text string) []string {
	var out []string
	for _, para := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		rest := strings.Join(strings.Fields(para), " ")
		for rest != "" {
			end := len(rest)
			for i := 0; i < len(rest)-1; i++ {
				if strings.IndexByte(".!?", rest[i]) >= 0 && rest[i+1] == ' ' {
					end = i + 1
					break
				}
			}
			s := strings.TrimLeft(rest[:end], "#-*> ")
			rest = strings.TrimSpace(rest[end:])
			if s == "" {
				continue
			}
			if strings.IndexByte(".!?", s[len(s)-1]) < 0 {
				s += "."
			}
			out = append(out, s)
		}
	}
	return out
}

// cutWords cuts s to at most n bytes, at a word boundary when one fits, else
// at a character boundary.
func cutWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, ' '); i > 0 && s[n] != ' ' {
		cut = cut[:i]
	}
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return strings.TrimRight(cut, " ")
}
