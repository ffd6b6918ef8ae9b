// Package alertrules reads the log alert rules of infra/modules/alerts.bicep
// and runs their queries on trace messages as Log Analytics would, so that
// tests can prove each alert the handler raises fires its rule from what
// really reaches Application Insights (the strings of an invocation
// reply's Logs, and the handler's stdout lines). It is test support: only
// _test.go files import it.
//
// The queries are evaluated on AppTraces.Message only, and only what the
// rules use is understood, exactly:
//
//	AppTraces | where <predicate> [| where <predicate>]... [| project ...]
//	predicate: term {or term}; term: factor {and factor}
//	factor: not(<predicate>) | (<predicate>) | Message <op> "<string>"
//	op: contains, !contains (case-insensitive), contains_cs, !contains_cs,
//	    matches regex (RE2, which Kusto's regex is)
//
// Anything else (another table, column or operator; has, with its term
// rules) is an error, so that a rule the evaluator cannot judge faithfully
// fails a test instead of passing it.
package alertrules
