// Package sizing derives how far offpath's ingestion workers may scale from
// the Azure OpenAI deployment they share, so that workers never outgrow the
// model's quota: twenty workers that all get 429s are worse than five that
// don't, and KEDA knows nothing about 429s.
//
// Compute turns a deployment's quota (TPM, RPM) and a workload (counted
// tokens and model calls per document, mean latency per call) into a Plan:
// the KEDA ScaledObject's maxReplicaCount and messageCount, the Functions
// host's Service Bus maxConcurrentCalls, and the per-instance token and
// request budget of the client-side rate limiter. The running instances
// share the deployment's whole quota through leases (package ratelimit),
// so the budget is only the static share an instance falls back to while
// the lease store cannot be reached: safe with every instance of the pool
// on it. The formulas:
//
//	t = counted tokens per call = (prompt + max_tokens per document) / calls per document
//	one instance running c calls at once sends 60·c/L requests and 60·c·t/L tokens a minute
//	maxReplicaCount = floor(min(u·TPM / (60·c·t/L), u·RPM / (60·c/L))), at least 1
//	messageCount    = c·D / (k·L), at least c (the count includes the c locked messages)
//
// where u is the target utilisation, L the mean seconds per call, k the
// calls per document and D the time one replica should take to clear its
// share of a backlog. c (maxConcurrentCalls) is the instance's concurrency
// cap, lowered when the whole pool's quota admits fewer concurrent calls.
//
// Apply writes a Plan into the files that carry it: the ScaledObject and
// Deployment manifests of the AKS workers and the Bicep parameters file of
// the Function App. It edits the values in place and keeps everything else,
// comments included.
package sizing
