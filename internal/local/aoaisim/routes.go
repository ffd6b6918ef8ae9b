package aoaisim

import (
	"net/http"
	"strings"
)

// surface is one of the two API surfaces Azure OpenAI exposes.
type surface struct {
	prefix  string // "/openai" or "/openai/v1"
	classic bool   // classic data plane: api-version required, deployment in path
}

// apiVersion names the version in messages (429 text); v1 has none.
func (sf surface) apiVersion(r *http.Request) string {
	if v := r.URL.Query().Get("api-version"); v != "" {
		return v
	}
	return "v1"
}

// routes builds the mux. Every route requires a key; classic routes also
// require ?api-version= (Azure answers 404 without it).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	classic := surface{prefix: "/openai", classic: true}
	v1 := surface{prefix: "/openai/v1"}

	// Synchronous inference.
	mux.Handle("POST /openai/deployments/{deployment}/chat/completions", s.versioned(classic, s.handleChat(classic)))
	mux.Handle("POST /openai/deployments/{deployment}/embeddings", s.versioned(classic, s.handleEmbeddings(classic)))
	mux.Handle("POST /openai/v1/chat/completions", s.handleChat(v1))
	mux.Handle("POST /openai/v1/embeddings", s.handleEmbeddings(v1))

	for _, sf := range []surface{classic, v1} {
		p := sf.prefix
		// Files.
		mux.Handle("POST "+p+"/files", s.versioned(sf, s.handleFileCreate(sf)))
		mux.Handle("GET "+p+"/files", s.versioned(sf, s.handleFileList()))
		mux.Handle("GET "+p+"/files/{id}", s.versioned(sf, s.handleFileGet()))
		mux.Handle("DELETE "+p+"/files/{id}", s.versioned(sf, s.handleFileDelete()))
		mux.Handle("GET "+p+"/files/{id}/content", s.versioned(sf, s.handleFileContent()))
		// Batches.
		mux.Handle("POST "+p+"/batches", s.versioned(sf, s.handleBatchCreate(sf)))
		mux.Handle("GET "+p+"/batches", s.versioned(sf, s.handleBatchList()))
		mux.Handle("GET "+p+"/batches/{id}", s.versioned(sf, s.handleBatchGet()))
		mux.Handle("POST "+p+"/batches/{id}/cancel", s.versioned(sf, s.handleBatchCancel()))
	}

	// Azure Monitor's metrics of the resource (served from ARM's URL space:
	// /subscriptions/.../providers/Microsoft.CognitiveServices/accounts/...).
	mux.HandleFunc("GET /subscriptions/", s.handleMetrics)
	// App Service's managed identity endpoint, which issues the tokens the
	// metrics API takes.
	mux.HandleFunc("GET "+IdentityPath, s.handleIdentity)

	// Simulator administration, outside Azure's URL space.
	mux.HandleFunc("GET /_sim/state", s.handleAdminState)
	mux.HandleFunc("GET /_sim/faults", s.handleAdminFaultsGet)
	mux.HandleFunc("PUT /_sim/faults", s.handleAdminFaultsSet)
	mux.HandleFunc("POST /_sim/faults", s.handleAdminFaultsSet)
	mux.HandleFunc("DELETE /_sim/faults", s.handleAdminFaultsClear)
	mux.HandleFunc("POST /_sim/clock", s.handleAdminClock)

	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		s.stats.route("not_found")
		writeError(w, errNotFound())
	})
	return s.authenticate(mux)
}

// authenticate answers 401 in Azure's shape unless the request carries a
// configured key; Azure Resource Manager's routes (the metrics) want a
// token of the managed identity endpoint instead, and that endpoint its
// own header.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setRequestIDs(w.Header())
		switch {
		case r.URL.Path == IdentityPath:
			next.ServeHTTP(w, r)
			return
		case strings.HasPrefix(r.URL.Path, "/subscriptions/"):
			if s.armAuthorized(w, r) {
				next.ServeHTTP(w, r)
			}
			return
		}
		if !s.authorized(r) {
			s.stats.route("unauthorized")
			writeError(w, errUnauthorized())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// versioned enforces ?api-version= on the classic surface.
func (s *Server) versioned(sf surface, next http.Handler) http.Handler {
	if !sf.classic {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api-version") == "" {
			s.stats.route("not_found")
			writeError(w, errNotFound())
			return
		}
		next.ServeHTTP(w, r)
	})
}
