// Package tokenmetrics sends the ledger's changes (ledger.Sample) where the
// platform already looks: Application Insights custom metrics in the shape
// API Management's llm-emit-token-metric policy emits (metrics "Prompt
// Tokens", "Completion Tokens" and "Total Tokens" in the namespace "API
// Management"), so that one query over customMetrics sums a team's
// gateway traffic with its queue and batch traffic. Without Application
// Insights the same stream is written as JSON lines.
package tokenmetrics
