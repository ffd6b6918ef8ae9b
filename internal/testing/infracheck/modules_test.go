package infracheck

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"testing"
)

var (
	moduleDecl = regexp.MustCompile(`(?m)^module\s+(\w+)\s+'([^']+)'\s*=\s*\{`)
	paramDecl  = regexp.MustCompile(`(?m)^param\s+(\w+)\s+\w+(\s*=)?`)
	outputDecl = regexp.MustCompile(`(?m)^output\s+(\w+)\s`)
	objectKey  = regexp.MustCompile(`^\s*'?([\w.-]+)'?\s*:`)
)

// topLevelKeys returns the keys of an object literal's first level.
func topLevelKeys(obj string) []string {
	var keys []string
	depth := 0
	for _, line := range strings.Split(obj, "\n") {
		if depth == 1 {
			if m := objectKey.FindStringSubmatch(line); m != nil {
				keys = append(keys, m[1])
			}
		}
		depth += strings.Count(line, "{") + strings.Count(line, "[") - strings.Count(line, "}") - strings.Count(line, "]")
	}
	return keys
}

// checkModules does part of what the Bicep compiler would: every module
// path exists, every parameter passed is declared by the module, every
// parameter without a default is passed, and every output read is declared.
func checkModules(t *testing.T, files []bicepFile) error {
	t.Helper()
	byName := map[string]string{}
	for _, f := range files {
		byName[f.name] = f.text
	}
	var errs []error
	for _, f := range files {
		for _, m := range moduleDecl.FindAllStringSubmatchIndex(f.text, -1) {
			sym, rel := f.text[m[2]:m[3]], f.text[m[4]:m[5]]
			target := path.Join(path.Dir(f.name), rel)
			mod, ok := byName[target]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: module %s: no infra/%s", f.name, sym, target))
				continue
			}
			declared := map[string]bool{} // name → has a default
			for _, p := range paramDecl.FindAllStringSubmatch(mod, -1) {
				declared[p[1]] = p[2] != ""
			}
			body, _ := block(f.text[m[0]:], f.text[m[0]:m[1]])
			params, _ := block(body, "params: {")
			passed := map[string]bool{}
			for _, k := range topLevelKeys(params) {
				passed[k] = true
				if _, ok := declared[k]; !ok {
					errs = append(errs, fmt.Errorf("%s: module %s passes %s, which %s does not declare", f.name, sym, k, target))
				}
			}
			for name, hasDefault := range declared {
				if !hasDefault && !passed[name] {
					errs = append(errs, fmt.Errorf("%s: module %s does not pass %s, which %s requires", f.name, sym, name, target))
				}
			}
			outputs := map[string]bool{}
			for _, o := range outputDecl.FindAllStringSubmatch(mod, -1) {
				outputs[o[1]] = true
			}
			for _, ref := range regexp.MustCompile(`\b`+sym+`\.outputs\.(\w+)`).FindAllStringSubmatch(f.text, -1) {
				if !outputs[ref[1]] {
					errs = append(errs, fmt.Errorf("%s: %s.outputs.%s is not an output of %s", f.name, sym, ref[1], target))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func TestBicep_BrokenModulesFail(t *testing.T) {
	t.Parallel()
	mod := bicepFile{name: "modules/m.bicep", text: "param a string\nparam b int = 1\noutput x string = a\n"}
	tests := []struct {
		main string
		want string
	}{
		{"module m 'modules/m.bicep' = {\n  name: 'm'\n  params: {\n    a: 'x'\n    c: 2\n  }\n}\n", "passes c, which modules/m.bicep does not declare"},
		{"module m 'modules/m.bicep' = {\n  name: 'm'\n  params: {\n    b: 2\n  }\n}\n", "does not pass a"},
		{"module m 'modules/m.bicep' = {\n  name: 'm'\n  params: {\n    a: 'x'\n  }\n}\noutput y string = m.outputs.y\n", "m.outputs.y is not an output"},
		{"module m 'modules/nope.bicep' = {\n}\n", "no infra/modules/nope.bicep"},
	}
	for _, tt := range tests {
		if err := checkModules(t, []bicepFile{{name: "main.bicep", text: tt.main}, mod}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("checkModules(%q) = %v, want an error containing %q", tt.main, err, tt.want)
		}
	}
	ok := "module m 'modules/m.bicep' = {\n  name: 'm'\n  params: {\n    a: 'x'\n    b: 3\n  }\n}\noutput y string = m.outputs.x\n"
	if err := checkModules(t, []bicepFile{{name: "main.bicep", text: ok}, mod}); err != nil {
		t.Errorf("checkModules(valid) = %v", err)
	}
}
