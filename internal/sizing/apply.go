package sizing

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// The settings a Plan is written to. The environment variables are read by
// the Functions host (maxConcurrentCalls overrides host.json) and by the
// handler's rate limiter; the parameters are main.bicep's, which turns them
// into the same app settings on the Function App.
const (
	EnvMaxConcurrentCalls = "AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls"
	EnvTPMBudget          = "OFFPATH_AOAI_TPM_BUDGET"
	EnvRPMBudget          = "OFFPATH_AOAI_RPM_BUDGET"

	ParamMaximumInstanceCount = "maximumInstanceCount"
	ParamMaxConcurrentCalls   = "serviceBusMaxConcurrentCalls"
	ParamTPMBudget            = "aoaiTokensPerMinutePerInstance"
	ParamRPMBudget            = "aoaiRequestsPerMinutePerInstance"
)

// Apply writes p into each file in paths, recognised by its content: a
// manifest with a KEDA ScaledObject gets maxReplicaCount and messageCount,
// one with a Deployment gets the concurrency and budget environment
// variables, and an ARM parameters file gets the Function App's parameters.
// A file that is none of these is an error; nothing is written unless every
// file patches cleanly.
func Apply(p Plan, paths ...string) error {
	patched := make([][]byte, len(paths))
	for i, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("apply sizing: %w", err)
		}
		if patched[i], err = Patch(p, text); err != nil {
			return fmt.Errorf("apply sizing to %s: %w", path, err)
		}
	}
	for i, path := range paths {
		if err := writeFile(path, patched[i]); err != nil {
			return fmt.Errorf("apply sizing: %w", err)
		}
	}
	return nil
}

var (
	kindScaledObject = regexp.MustCompile(`(?m)^kind:\s*ScaledObject\s*$`)
	kindDeployment   = regexp.MustCompile(`(?m)^kind:\s*Deployment\s*$`)
	armParameters    = regexp.MustCompile(`deploymentParameters\.json`)
)

// Patch returns text with p written into it (see Apply).
func Patch(p Plan, text []byte) ([]byte, error) {
	var errs []error
	recognised := false
	out := text
	if kindScaledObject.Match(out) {
		recognised = true
		out, errs = PatchScaledObject(p, out), append(errs, checkScaledObject(out))
	}
	if kindDeployment.Match(out) {
		recognised = true
		var err error
		out, err = PatchDeployment(p, out)
		errs = append(errs, err)
	}
	if armParameters.Match(out) {
		recognised = true
		var err error
		out, err = PatchParameters(p, out)
		errs = append(errs, err)
	}
	if !recognised {
		return nil, errors.New("neither a ScaledObject or Deployment manifest nor an ARM parameters file")
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

var (
	maxReplicaLine   = regexp.MustCompile(`(?m)^(\s*maxReplicaCount:\s*)\d+`)
	messageCountLine = regexp.MustCompile(`(?m)^(\s*messageCount:\s*)"\d+"`)
)

func checkScaledObject(text []byte) error {
	var errs []error
	if n := len(maxReplicaLine.FindAll(text, -1)); n != 1 {
		errs = append(errs, fmt.Errorf("want one maxReplicaCount line, found %d", n))
	}
	if n := len(messageCountLine.FindAll(text, -1)); n != 1 {
		errs = append(errs, fmt.Errorf(`want one messageCount: "<n>" line, found %d`, n))
	}
	return errors.Join(errs...)
}

// PatchScaledObject sets maxReplicaCount and the trigger's messageCount.
// Call checkScaledObject (through Patch) to make sure both exist once.
func PatchScaledObject(p Plan, text []byte) []byte {
	text = maxReplicaLine.ReplaceAll(text, []byte("${1}"+strconv.Itoa(p.MaxReplicaCount)))
	return messageCountLine.ReplaceAll(text, []byte(`${1}"`+strconv.Itoa(p.MessageCount)+`"`))
}

// PatchDeployment sets the value of the concurrency and budget environment
// variables, written as `- name: X` followed by `value: "<v>"`.
func PatchDeployment(p Plan, text []byte) ([]byte, error) {
	values := []struct {
		name  string
		value int
	}{
		{EnvMaxConcurrentCalls, p.MaxConcurrentCalls},
		{EnvTPMBudget, p.TPMPerInstance},
		{EnvRPMBudget, p.RPMPerInstance},
	}
	var errs []error
	for _, v := range values {
		re := regexp.MustCompile(`(?m)^(\s*-\s*name:\s*` + regexp.QuoteMeta(v.name) + `\s*\n\s*value:\s*)"[^"\n]*"`)
		if n := len(re.FindAll(text, -1)); n != 1 {
			errs = append(errs, fmt.Errorf("want one env entry %s with a quoted value on the next line, found %d", v.name, n))
			continue
		}
		text = re.ReplaceAll(text, []byte(`${1}"`+strconv.Itoa(v.value)+`"`))
	}
	return text, errors.Join(errs...)
}

// PatchParameters sets the Function App's sizing parameters in an ARM
// parameters file ("name": {"value": <n>}).
func PatchParameters(p Plan, text []byte) ([]byte, error) {
	values := []struct {
		name  string
		value int
	}{
		{ParamMaximumInstanceCount, p.MaxReplicaCount},
		{ParamMaxConcurrentCalls, p.MaxConcurrentCalls},
		{ParamTPMBudget, p.TPMPerInstance},
		{ParamRPMBudget, p.RPMPerInstance},
	}
	var errs []error
	for _, v := range values {
		re := regexp.MustCompile(`("` + regexp.QuoteMeta(v.name) + `"\s*:\s*\{\s*"value"\s*:\s*)-?\d+`)
		if n := len(re.FindAll(text, -1)); n != 1 {
			errs = append(errs, fmt.Errorf(`want one parameter "%s": {"value": <n>}, found %d`, v.name, n))
			continue
		}
		text = re.ReplaceAll(text, []byte("${1}"+strconv.Itoa(v.value)))
	}
	return text, errors.Join(errs...)
}

// writeFile replaces path atomically, keeping its permissions.
func writeFile(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}
