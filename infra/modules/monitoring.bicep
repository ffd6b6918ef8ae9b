// Log Analytics and a workspace-based Application Insights. Local
// (instrumentation-key) authentication is off: telemetry is accepted only
// with an Entra token, which the Functions host gets for the app identity
// (APPLICATIONINSIGHTS_AUTHENTICATION_STRING); the identity holds
// Monitoring Metrics Publisher on this component (rbac.bicep).

param location string
param tags object
param logAnalyticsName string
param appInsightsName string

@minValue(30)
@description('Days Log Analytics keeps offpath\'s logs, alert events included.')
param retentionInDays int = 30

resource law 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
  }
}

resource appi 'Microsoft.Insights/components@2020-02-02' = {
  name: appInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: law.id
    DisableLocalAuth: true
  }
}

// Tokens by team: the gateway's metrics (API Management's
// llm-emit-token-metric) beside offpath's queue and batch ones, which carry
// the same names; the query is ../queries/tokens-by-team.kql.
resource tokensWorkbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(appi.id, 'tokens-by-team')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: 'Tokens by team'
    category: 'workbook'
    sourceId: appi.id
    serializedData: loadTextContent('../workbooks/tokens-by-team.workbook.json')
  }
}

output logAnalyticsId string = law.id
output appInsightsName string = appi.name
// Not a secret: it locates the component; with local auth disabled it
// authorises nothing on its own.
output appInsightsConnectionString string = appi.properties.ConnectionString
