// Package infracheck holds the offline checks of offpath's infrastructure
// as code: nothing under infra/ can be deployed from a development machine
// or CI (no Azure, no Bicep compiler, no cluster), so its tests check what
// can be checked without them, and fail on mistakes that are known to reach
// production:
//
//   - every Kubernetes manifest in infra/k8s, rendered with placeholder
//     values the way azd renders it, decodes strictly into its k8s.io/api
//     type; KEDA resources validate against JSON schemas generated from
//     the CRDs of KEDA's Go module (fetched at test time, hash-pinned) with
//     additionalProperties false; the
//     azure-servicebus trigger's metadata uses only the scaler's keys, as
//     strings, with a short namespace name; no HorizontalPodAutoscaler
//     targets a workload a ScaledObject scales;
//   - every .bicep file parses (tree-sitter-bicep, through node), and the
//     Bicep text pins every API version, keeps FUNCTIONS_WORKER_RUNTIME out
//     of the Flex app settings, holds no keys or connection strings, uses
//     the documented GUID for every role and disables local auth on Service
//     Bus and Azure OpenAI;
//   - every functions/*/function.json agrees with host.json, with the
//     handler's registered routes and with the settings the infra passes
//     (each connection has its identity-based settings where it runs);
//   - every OFFPATH_* setting the Function App and the AKS workers get is
//     read by the handler's configuration (config.Inspect, asked what it
//     looks up) or named by a function binding, so that none is ignored;
//   - each function runs on exactly one host, as the Functions host decides
//     it from the allow-list and Disabled settings (valid app-setting names
//     only): the AKS workers run what their ScaledObject's queue triggers,
//     the Function App everything else;
//   - host.json lets every trace through to Application Insights: Trace is
//     excluded from sampling and the categories of the reply's Logs and of
//     the handler's stdout log at Information;
//   - azure.yaml, the hooks, the parameters file and the model deployments
//     agree with the Bicep and with models.json.
//
// The package has no code of its own: it is its tests. Each check is a
// function over bytes, so that testdata/ can prove it fails on a broken
// input.
package infracheck
