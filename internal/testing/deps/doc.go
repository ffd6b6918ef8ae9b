// Package deps holds the test of the layering rule: the domain and the
// flows depend on no SDK and on no adapter (see deps_test.go and the
// README's Layout).
package deps
