package devhost

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// keys are the function and master keys that protect HTTP functions and the
// admin API, from local settings DEVHOST_FUNCTION_KEY and DEVHOST_MASTER_KEY.
// (In Azure they live in the host's key store; Core Tools skips them
// locally, which is how a missing key goes unnoticed until deployment.)
type keys struct {
	function string
	master   string
}

func keysFrom(app *App) keys {
	return keys{function: app.setting("DEVHOST_FUNCTION_KEY"), master: app.setting("DEVHOST_MASTER_KEY")}
}

// allows reports whether r carries a key good enough for authLevel: none
// for anonymous, the function or master key for function, the master key
// for admin. Keys come in the x-functions-key header or the code query.
func (k keys) allows(r *http.Request, authLevel string) bool {
	level := strings.ToLower(authLevel)
	if level == "anonymous" {
		return true
	}
	got := r.Header.Get("x-functions-key")
	if got == "" {
		got = r.URL.Query().Get("code")
	}
	if got == "" {
		return false
	}
	if k.master != "" && subtle.ConstantTimeCompare([]byte(got), []byte(k.master)) == 1 {
		return true
	}
	return level != "admin" && k.function != "" && subtle.ConstantTimeCompare([]byte(got), []byte(k.function)) == 1
}
