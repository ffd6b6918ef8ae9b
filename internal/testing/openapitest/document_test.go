package openapitest_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/offpath/offpath/internal/api"
	"github.com/offpath/offpath/internal/testing/openapitest"
)

// TestDocument_ImportsIntoAPIManagement holds the document to Azure API
// Management's documented OpenAPI import restrictions, so that a platform
// team can import /api/v1/openapi.json as it is.
func TestDocument_ImportsIntoAPIManagement(t *testing.T) {
	raw, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Versions: OpenAPI 3.0.x up to 3.0.3 (3.1 imports only); inline
	// documents up to 4 MB.
	if !regexp.MustCompile(`^3\.0\.[0-3]$`).MatchString(doc.OpenAPI) {
		t.Errorf("openapi %q: API Management takes 3.0.0 to 3.0.3", doc.OpenAPI)
	}
	if len(raw) > 4<<20 {
		t.Errorf("the document is %d bytes; API Management imports at most 4 MB inline", len(raw))
	}
	// Servers: the first https one is used, a relative one is applied to
	// the URL the document was imported from; no templating.
	for _, s := range doc.Servers {
		if len(s.Variables) > 0 || (!strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "/")) {
			t.Errorf("server %q: want https or relative, without variables", s.URL)
		}
	}
	// Unsupported fields and extensions, anywhere in the document.
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	walk(tree, "", func(path, key string, v any) {
		if strings.HasSuffix(path, "/properties") || strings.HasSuffix(path, "/paths") {
			return // a property's or a path's name, not a field
		}
		switch {
		case strings.HasPrefix(key, "x-"):
			t.Errorf("%s/%s: extensions are ignored on import (only x-ms-paths and x-servers are supported)", path, key)
		case key == "$ref":
			if s, _ := v.(string); !strings.HasPrefix(s, "#/components/schemas/") {
				t.Errorf("%s: $ref %v: only references to components/schemas import", path, v)
			}
		case key == "externalDocs", key == "callbacks", key == "links", key == "examples":
			t.Errorf("%s/%s is not supported on import", path, key)
		}
	})
	for name := range map[string]bool{"responses": true, "parameters": true, "examples": true, "requestBodies": true, "headers": true, "links": true, "callbacks": true} {
		if c, _ := tree.(map[string]any)["components"].(map[string]any); c[name] != nil {
			t.Errorf("components/%s is not supported on import", name)
		}
	}
	// Operations: an operationId each, unique and whole once normalised
	// as API Management does (lower case, runs of other characters as one
	// dash, trimmed, 76 characters); a summary of at most 300 characters.
	seen := map[string]string{}
	nonAlnum := regexp.MustCompile(`[^a-z0-9]+`)
	for path, item := range doc.Paths.Map() {
		if item.Trace != nil || len(item.Servers) > 0 {
			t.Errorf("%s: trace and path-level servers are not supported", path)
		}
		template := templateParams(path)
		for method, op := range item.Operations() {
			where := method + " " + path
			id := strings.Trim(nonAlnum.ReplaceAllString(strings.ToLower(op.OperationID), "-"), "-")
			switch {
			case op.OperationID == "":
				t.Errorf("%s: no operationId", where)
			case len(id) > 76:
				t.Errorf("%s: operationId %q is cut at 76 characters on import", where, op.OperationID)
			case seen[id] != "":
				t.Errorf("%s: operationId %q normalises as %s's does", where, op.OperationID, seen[id])
			}
			seen[id] = where
			if op.Summary == "" || len(op.Summary) > 300 {
				t.Errorf("%s: summary %q: 1 to 300 characters", where, op.Summary)
			}
			if op.Servers != nil || op.Callbacks != nil {
				t.Errorf("%s: operation servers and callbacks are not supported", where)
			}
			if op.RequestBody != nil && slices.Contains([]string{"GET", "HEAD", "OPTIONS"}, method) {
				t.Errorf("%s: API Management drops the body of GET, HEAD and OPTIONS", where)
			}
			// Parameters: every template parameter declared and every path
			// parameter in the template; required path and query names
			// unique over the whole URL template, whatever their case; only
			// the default serialisation; no cookies.
			params := append(slices.Clone(item.Parameters), op.Parameters...)
			var declared, required []string
			for _, pr := range params {
				p := pr.Value
				if p.In == "path" {
					declared = append(declared, p.Name)
				}
				if (p.In == "path" || p.In == "query") && p.Required {
					required = append(required, strings.ToLower(p.Name))
				}
				if p.In == "cookie" || p.Style != "" || p.Explode != nil || p.AllowEmptyValue || p.AllowReserved {
					t.Errorf("%s: parameter %s: cookies, style, explode, allowEmptyValue and allowReserved are not supported", where, p.Name)
				}
			}
			slices.Sort(declared)
			if !slices.Equal(declared, template) {
				t.Errorf("%s: path parameters %v, the template has %v", where, declared, template)
			}
			slices.Sort(required)
			if len(slices.Compact(slices.Clone(required))) != len(required) {
				t.Errorf("%s: required parameter names %v are not unique", where, required)
			}
			// Bodies: schemas defined at the API's scope and referenced.
			bodies := map[string]*openapi3.MediaType{}
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					bodies["request "+ct] = mt
				}
			}
			for status, rr := range op.Responses.Map() {
				for ct, mt := range rr.Value.Content {
					bodies[status+" "+ct] = mt
				}
			}
			for what, mt := range bodies {
				if mt.Schema == nil || mt.Schema.Ref == "" {
					t.Errorf("%s: %s: inline schemas are not supported; reference components/schemas", where, what)
				}
			}
		}
	}
	// No schema refers to itself, directly or not.
	for name := range doc.Components.Schemas {
		if recursive(doc, name, name, map[string]bool{}) {
			t.Errorf("schema %s is recursive", name)
		}
	}
}

func templateParams(path string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// walk calls f for every member of every object in v.
func walk(v any, path string, f func(path, key string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			f(path, k, c)
			walk(c, path+"/"+k, f)
		}
	case []any:
		for _, c := range x {
			walk(c, path+"/[]", f)
		}
	}
}

func recursive(doc *openapi3.T, start, name string, seen map[string]bool) bool {
	if seen[name] {
		return false
	}
	seen[name] = true
	found := false
	var visit func(s *openapi3.SchemaRef)
	visit = func(s *openapi3.SchemaRef) {
		if s == nil || found {
			return
		}
		if s.Ref != "" {
			ref := strings.TrimPrefix(s.Ref, "#/components/schemas/")
			found = ref == start || recursive(doc, start, ref, seen)
			return
		}
		v := s.Value
		for _, p := range v.Properties {
			visit(p)
		}
		visit(v.Items)
		if v.AdditionalProperties.Schema != nil {
			visit(v.AdditionalProperties.Schema)
		}
		for _, l := range []openapi3.SchemaRefs{v.AllOf, v.AnyOf, v.OneOf} {
			for _, c := range l {
				visit(c)
			}
		}
	}
	s := doc.Components.Schemas[name]
	if s == nil {
		return false
	}
	visit(&openapi3.SchemaRef{Value: s.Value})
	return found
}
