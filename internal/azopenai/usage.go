package azopenai

import (
	"github.com/openai/openai-go/v3"

	"github.com/offpath/offpath/internal/ledger"
)

// chatUsage reads the usage a chat completion reported.
func chatUsage(u openai.CompletionUsage) ledger.Usage {
	return ledger.Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		CachedTokens:     u.PromptTokensDetails.CachedTokens,
		ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
	}
}
