package devhost

import (
	"slices"
	"strconv"
	"strings"
)

// routeTemplate is an HTTP trigger's route, e.g. "orders/{id:int}/{*rest}",
// matched segment by segment as ASP.NET routing does for these forms:
// literals (case-insensitive), {param}, {param?}, {param:constraint} (int,
// long, bool, guid and alpha are checked; others are accepted), and a
// trailing catch-all {*param}.
type routeTemplate struct {
	segments []string
	methods  []string
}

func newRoute(prefix, route string, methods []string) routeTemplate {
	path := strings.Trim(strings.Trim(prefix, "/")+"/"+strings.Trim(route, "/"), "/")
	rt := routeTemplate{segments: strings.Split(path, "/")}
	for _, m := range methods {
		rt.methods = append(rt.methods, strings.ToUpper(m))
	}
	return rt
}

// allowsMethod reports whether the trigger accepts method (no list: all).
func (rt routeTemplate) allowsMethod(method string) bool {
	return len(rt.methods) == 0 || slices.Contains(rt.methods, method)
}

// match binds path (without query) to the template; values are nil for an
// absent optional or empty catch-all.
func (rt routeTemplate) match(path string) (map[string]*string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	params := map[string]*string{}
	for i, seg := range rt.segments {
		if !strings.HasPrefix(seg, "{") || !strings.HasSuffix(seg, "}") {
			if i >= len(parts) || !strings.EqualFold(parts[i], seg) {
				return nil, false
			}
			continue
		}
		name := seg[1 : len(seg)-1]
		if strings.HasPrefix(name, "*") {
			name = strings.TrimPrefix(name, "*")
			if i >= len(parts) || (len(parts) == i+1 && parts[i] == "") {
				params[name] = nil
			} else {
				rest := strings.Join(parts[i:], "/")
				params[name] = &rest
			}
			return params, true
		}
		optional := strings.HasSuffix(name, "?")
		name = strings.TrimSuffix(name, "?")
		name, constraint, _ := strings.Cut(name, ":")
		if i >= len(parts) || parts[i] == "" {
			if !optional {
				return nil, false
			}
			params[name] = nil
			continue
		}
		if !satisfies(parts[i], constraint) {
			return nil, false
		}
		v := parts[i]
		params[name] = &v
	}
	return params, len(parts) <= len(rt.segments)
}

func satisfies(v, constraint string) bool {
	switch strings.ToLower(constraint) {
	case "int":
		_, err := strconv.ParseInt(v, 10, 32)
		return err == nil
	case "long":
		_, err := strconv.ParseInt(v, 10, 64)
		return err == nil
	case "bool":
		_, err := strconv.ParseBool(v)
		return err == nil
	case "guid":
		return len(v) == 36 && strings.Count(v, "-") == 4
	case "alpha":
		return strings.IndexFunc(v, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }) < 0
	}
	return true
}
