package infracheck

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Patterns that put a key or a connection string into a template or an app
// setting. The Application Insights connection string is allowed: it only
// locates the component, whose local auth is disabled.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\blist(Keys|ConnectionStrings|AccountSas|ServiceSas|Secrets)\s*\(`),
	regexp.MustCompile(`(?i)\.list\w*\(`),
	regexp.MustCompile(`(?i)AccountKey=|SharedAccessKey|DefaultEndpointsProtocol=|primaryKey|secondaryKey|primaryConnectionString|secondaryConnectionString`),
	regexp.MustCompile(`(?m)^\s*'?(AzureWebJobsStorage|AzureWebJobsServiceBus|ServiceBus|WEBSITE_CONTENTAZUREFILECONNECTIONSTRING)'?\s*:`),
	regexp.MustCompile(`(?i)adminUserEnabled:\s*true|allowSharedKeyAccess:\s*true|disableLocalAuth:\s*false`),
}

func checkNoSecrets(files []bicepFile) error {
	var errs []error
	for _, f := range files {
		for n, line := range strings.Split(f.text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, re := range secretPatterns {
				if m := re.FindString(line); m != "" {
					errs = append(errs, fmt.Errorf("%s:%d: %q: no keys or connection strings; use identity-based settings", f.name, n+1, strings.TrimSpace(m)))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// localAuthRules: each resource type that has a key or SAS door must have
// it shut, in the file that declares it.
var localAuthRules = []struct{ resourceType, setting string }{
	{"Microsoft.ServiceBus/namespaces@", "disableLocalAuth: true"},
	{"Microsoft.CognitiveServices/accounts@", "disableLocalAuth: true"},
	{"Microsoft.Storage/storageAccounts@", "allowSharedKeyAccess: false"},
	{"Microsoft.Insights/components@", "DisableLocalAuth: true"},
	{"Microsoft.ContainerRegistry/registries@", "adminUserEnabled: false"},
}

func checkLocalAuth(files []bicepFile) error {
	var errs []error
	for _, rule := range localAuthRules {
		for _, f := range files {
			for _, m := range resourceDecl.FindAllStringSubmatchIndex(f.text, -1) {
				decl := f.text[m[4]:m[5]]
				if !strings.HasPrefix(decl, rule.resourceType) || strings.Contains(f.text[m[1]:min(m[1]+20, len(f.text))], "existing") {
					continue
				}
				body, _ := block(f.text[m[0]:], "= {")
				if !strings.Contains(body, rule.setting) {
					errs = append(errs, fmt.Errorf("%s: resource %s (%s) lacks %s", f.name, f.text[m[2]:m[3]], decl, rule.setting))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Built-in role definition GUIDs (Azure's built-in roles list).
var documentedRoles = map[string]string{
	"b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
	"ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
	"974c5e8b-45b9-4653-ba55-5f855dd0fb88": "Storage Queue Data Contributor",
	"0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3": "Storage Table Data Contributor",
	"090c5cfd-751d-490a-894a-3ce6f1109419": "Azure Service Bus Data Owner",
	"4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0": "Azure Service Bus Data Receiver",
	"69a216fc-b8fb-44d8-bc22-1f3c2cd27a39": "Azure Service Bus Data Sender",
	"5e0bd9bd-7b93-4f28-af87-19fc36ad61bd": "Cognitive Services OpenAI User",
	"3913510d-42f4-4e42-8a64-420c390055eb": "Monitoring Metrics Publisher",
	"43d0d8ad-25c7-4714-9337-8ba259a9fe05": "Monitoring Reader",
	"7f951dda-4ed3-4680-a7ca-43fe172d538d": "AcrPull",
}

var (
	guidLiteral = regexp.MustCompile(`'([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})'`)
	namedGUID   = regexp.MustCompile(`(?m)^\s*(\w+)\s*[:=]\s*'([0-9a-fA-F-]{36})'`)
	roleDefRef  = regexp.MustCompile(`roleDefinitionId:\s*(.*)`)
)

// checkRoles: every GUID in the Bicep is a documented built-in role, every
// name a GUID is given (roles.storageBlobDataOwner, acrPull) spells that
// role, and every roleDefinitionId is built from one with
// subscriptionResourceId.
func checkRoles(files []bicepFile) error {
	var errs []error
	squash := func(s string) string {
		return strings.ToLower(strings.NewReplacer(" ", "", "azure", "").Replace(strings.ToLower(s)))
	}
	for _, f := range files {
		for _, m := range guidLiteral.FindAllStringSubmatch(f.text, -1) {
			if _, ok := documentedRoles[strings.ToLower(m[1])]; !ok {
				errs = append(errs, fmt.Errorf("%s: %s is not a documented built-in role GUID", f.name, m[1]))
			}
		}
		for _, m := range namedGUID.FindAllStringSubmatch(f.text, -1) {
			role, ok := documentedRoles[strings.ToLower(m[2])]
			if ok && squash(m[1]) != squash(role) {
				errs = append(errs, fmt.Errorf("%s: %s = %s, which is %q", f.name, m[1], m[2], role))
			}
		}
		for _, m := range roleDefRef.FindAllStringSubmatch(f.text, -1) {
			if !strings.HasPrefix(m[1], "subscriptionResourceId('Microsoft.Authorization/roleDefinitions', ") {
				errs = append(errs, fmt.Errorf("%s: roleDefinitionId: %s: build it with subscriptionResourceId('Microsoft.Authorization/roleDefinitions', <GUID>)", f.name, m[1]))
			}
		}
	}
	return errors.Join(errs...)
}
