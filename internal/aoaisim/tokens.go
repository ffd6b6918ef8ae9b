package aoaisim

import (
	"hash/fnv"
	"math/rand/v2"
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

// words feed the deterministic completions: plain lowercase so that the text
// is easy to read in logs of the caller (the simulator never logs it).
const wordList = "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will more its about up out who them some could what into time only new other than then now look made way any like our over such also back most after first well even work because good give day use these year many"

func splitWords() []string {
	var ws []string
	start := 0
	for i := 0; i <= len(wordList); i++ {
		if i == len(wordList) || wordList[i] == ' ' {
			ws = append(ws, wordList[start:i])
			start = i + 1
		}
	}
	return ws
}

// completer generates deterministic completion text.
type completer struct {
	words []string
}

func newCompleter() *completer { return &completer{words: splitWords()} }

// seed hashes the prompt into a 64-bit seed.
func seedOf(parts ...[]byte) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write(p)
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// complete returns the text for choice index of a prompt with the given seed.
// Its natural length is 8 to 48 tokens, derived from the seed; limit (when
// positive) caps it, and truncated reports whether the cap cut it short.
func (c *completer) complete(seed uint64, index int, limit int) (text string, truncated bool) {
	rng := rand.New(rand.NewPCG(seed, uint64(index)+0x9e3779b97f4a7c15))
	want := 8 + rng.IntN(41)
	if limit > 0 && limit < want {
		want, truncated = limit, true
	}
	maxBytes := want * CharsPerToken
	budget := maxBytes
	if !truncated {
		budget-- // room for the final full stop
	}
	buf := make([]byte, 0, maxBytes)
	for {
		w := c.words[rng.IntN(len(c.words))]
		need := len(w)
		if len(buf) > 0 {
			need++
		}
		if len(buf)+need > budget {
			break
		}
		if len(buf) > 0 {
			buf = append(buf, ' ')
		}
		buf = append(buf, w...)
	}
	if len(buf) == 0 { // the cap is smaller than any word: cut one
		buf = append(buf, c.words[rng.IntN(len(c.words))]...)
		buf = buf[:min(len(buf), budget)]
	}
	if !truncated {
		buf[0] -= 'a' - 'A'
		buf = append(buf, '.')
	}
	return string(buf), truncated
}
