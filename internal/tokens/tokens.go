// Package tokens is offpath's one token approximation. Azure OpenAI charges a
// request against a deployment's tokens-per-minute quota from an estimate it
// makes before running the model, and offpath must predict that charge on the
// client side (to pace requests) and size chunks for embedding models without
// a tokenizer for every model family. So every part of the queue path counts
// tokens the same way, the way internal/local/aoaisim counts them:
//
//   - text:    ceil(UTF-8 bytes / 4)
//   - message: 4 + text tokens of its content
//   - prompt:  3 + sum of messages
//
// Bytes over four is a deliberate over-estimate for English (about 4 chars
// per token) and a reasonable one for other scripts, whose runes take 2–4
// bytes. It is an estimate for pacing and sizing; metering always uses the
// usage the service reports.
package tokens

const (
	// BytesPerToken is the divisor of the approximation.
	BytesPerToken = 4
	// MessageOverhead is added per chat message (role and framing).
	MessageOverhead = 4
	// ReplyPriming is added once per chat prompt.
	ReplyPriming = 3
)

// Text approximates the tokens of s: ceil(len(s) / 4).
func Text(s string) int { return Bytes(len(s)) }

// Bytes approximates the tokens of n bytes of text: ceil(n / 4).
func Bytes(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

// MaxBytes is the largest number of bytes whose approximation is at most n
// tokens: 4n.
func MaxBytes(n int) int { return max(n, 0) * BytesPerToken }

// Prompt approximates the prompt tokens of a chat request whose messages have
// the given contents.
func Prompt(contents ...string) int {
	n := ReplyPriming
	for _, c := range contents {
		n += MessageOverhead + Text(c)
	}
	return n
}
