// Package offpath holds the files shipped at the root of the repository
// that tools need wherever they run: the model catalog and the Azure OpenAI
// deployments the infrastructure creates, embedded as they were built.
package offpath

import _ "embed"

// Models is models.json, the model catalog.
//
//go:embed models.json
var Models []byte

// Deployments is infra/model-deployments.json, the deployments (and their
// quotas) the Bicep creates.
//
//go:embed infra/model-deployments.json
var Deployments []byte
