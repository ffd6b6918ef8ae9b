package apptest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// NeverSchedule is the NCRONTAB schedule given to a timer whose schedule
// setting a test leaves unset: midnight on the first of January, which no
// test runs into. A test fires such a timer with Stack.Fire.
const NeverSchedule = "0 0 0 1 1 *"

// settingRef matches a %SETTING% reference in a binding property.
var settingRef = regexp.MustCompile(`%([^%]+)%`)

// writeApp writes the app folder dir from the repository at root: host.json,
// models.json and every functions/*/function.json (or its replacement in
// functions), with the settings that the function.json files reference but
// settings leaves unset filled in. It returns settings with those defaults
// added.
func writeApp(root, dir string, settings map[string]string, functions map[string]string) (map[string]string, error) {
	out := maps.Clone(settings)
	for _, f := range []string{"host.json", "models.json"} {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
			return nil, err
		}
	}
	defs, err := filepath.Glob(filepath.Join(root, "functions", "*", "function.json"))
	if err != nil {
		return nil, fmt.Errorf("list the functions: %w", err)
	}
	if len(defs) == 0 {
		return nil, fmt.Errorf("no functions/*/function.json in %s", root)
	}
	for name := range functions {
		if !slices.Contains(defs, filepath.Join(root, "functions", name, "function.json")) {
			return nil, fmt.Errorf("no function %q to replace", name)
		}
	}
	for _, def := range defs {
		name := filepath.Base(filepath.Dir(def))
		dst := filepath.Join(dir, name, "function.json")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, fmt.Errorf("function folder %s: %w", name, err)
		}
		if body, ok := functions[name]; ok {
			if err := os.WriteFile(dst, []byte(body), 0o644); err != nil {
				return nil, fmt.Errorf("write %s: %w", dst, err)
			}
		} else if err := copyFile(def, dst); err != nil {
			return nil, err
		}
		refs, err := settingDefaults(dst)
		if err != nil {
			return nil, err
		}
		for k, v := range refs {
			if _, set := out[k]; !set {
				out[k] = v
			}
		}
	}
	return out, nil
}

// settingDefaults returns a test default for every %SETTING% that the
// bindings of the function.json at path reference: NeverSchedule for a
// schedule, so that a timer added to the app does not fire on its own during
// a test; otherwise the setting's name in lower case with hyphens, a valid
// queue, container or path name.
func settingDefaults(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var def struct {
		Bindings []map[string]any `json:"bindings"`
	}
	if err := json.Unmarshal(b, &def); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]string{}
	for _, binding := range def.Bindings {
		for prop, v := range binding {
			s, ok := v.(string)
			if !ok {
				continue
			}
			for _, m := range settingRef.FindAllStringSubmatch(s, -1) {
				if strings.EqualFold(prop, "schedule") {
					out[m[1]] = NeverSchedule
				} else {
					out[m[1]] = strings.ReplaceAll(strings.ToLower(m[1]), "_", "-")
				}
			}
		}
	}
	return out, nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
}
