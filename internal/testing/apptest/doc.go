// Package apptest runs the whole app for end-to-end tests: the real handler
// binary behind the dev host, with a private Azurite, the Azure OpenAI
// simulator, seeded tenants and an alert sink, all on loopback.
//
// It is test support: only _test.go files import it. A test starts a Stack
// with Start and talks to the app as a tenant would (Do), as an operator
// would (DoAdmin), or as the host's timers would (Fire), and inspects what
// the app left behind through the same storage clients the handler uses.
//
// The handler is built once per test binary. A package whose tests use
// apptest removes that build at the end from its TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		apptest.Cleanup()
//		os.Exit(code)
//	}
//
// Without it, the next test binary that builds the handler removes the
// leftover once its process has exited.
//
// The handler's log goes to the test log as it comes only with go test -v;
// otherwise a failed test ends with the last lines of the handler's and the
// dev host's output, and Output returns all of it.
package apptest
