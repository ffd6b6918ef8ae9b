package webhook

// NewMemStore is the in-memory Store the package's tests use, for the
// contract suite that holds it to tablestore's (package webhook_test).
func NewMemStore(eps ...Endpoint) Store { return &memStore{eps: eps, events: map[string]Event{}} }
