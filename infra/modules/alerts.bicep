// offpath's alerts and where they go.
//
// Log alerts read offpath's own alert lines. What reaches Application
// Insights from a custom handler is text only: the strings of each
// invocation reply's Logs (recorded at Information level, correlated to the
// invocation, without the JSON fields) and the handler's stdout lines (host
// logs); both land in the workspace's AppTraces table, Message column.
// Package alert starts every alert's message with a stable marker,
// "offpath-alert name=<name>:", e.g. the reply's Logs string
//   error: offpath-alert name=batch_failed: batch b1 of job j1 failed
// and the queries match that marker, never a JSON field or the level
// (internal/testing/infracheck runs each query's filter on the handler's real
// Logs output). One rule per kind of trouble, so that each has its own
// severity and history; a last rule catches alert names added later. A
// rule may count a line twice (Logs and stdout): it fires on more than 0.
// A metric alert watches dead-lettered messages: the dead-letter queues hold
// only real infrastructure failures (and expired backlog), never answered
// questions, so any dead letter deserves a look.

param location string
param tags object
param actionGroupName string
param alertEmail string
param logAnalyticsId string
param serviceBusId string

// Each rule's query is written out whole, as the portal shows it. Every
// name a rule above the last selects is excluded by the last one.
var alertEvents = [
  {
    name: 'job-expired'
    severity: 2
    description: 'A batch job expired: its unfinished lines were not processed within 24 h (partial output is still harvested and billed).'
    query: 'AppTraces | where Message contains "offpath-alert name=batch_expired:" | project TimeGenerated, Message'
  }
  {
    name: 'job-failed'
    severity: 1
    description: 'A batch job failed (validation or service error), or offpath\'s credential is refused: the tenant\'s work was not done.'
    query: 'AppTraces | where Message contains "offpath-alert name=batch_failed:" or Message contains "offpath-alert name=azure_auth:" | project TimeGenerated, Message'
  }
  {
    name: 'job-overdue'
    severity: 2
    description: 'A batch job is past its completion window, held for quota too long, or its output is about to expire unharvested.'
    query: 'AppTraces | where Message contains "offpath-alert name=batch_overdue:" or Message contains "offpath-alert name=held_too_long:" or Message contains "offpath-alert name=output_expiring_unharvested:" | project TimeGenerated, Message'
  }
  {
    name: 'second-door'
    severity: 0
    description: 'A batch or file exists on the Azure OpenAI account that offpath did not create: someone has another door to the models.'
    query: 'AppTraces | where Message contains "offpath-alert name=second_door:" | project TimeGenerated, Message'
  }
  {
    name: 'morning-report-missing'
    severity: 2
    description: 'The nightly ticket summaries failed, or did not produce their morning report by the deadline.'
    query: 'AppTraces | where Message contains "offpath-alert name=morning_report_missing:" or Message contains "offpath-alert name=nightly_failed:" | project TimeGenerated, Message'
  }
  {
    name: 'other-alert'
    severity: 2
    description: 'Any other offpath alert (output lost, counts mismatch, harvest failing, and names added later).'
    query: 'AppTraces | where Message contains "offpath-alert name=" and not(Message contains "offpath-alert name=batch_expired:" or Message contains "offpath-alert name=batch_failed:" or Message contains "offpath-alert name=azure_auth:" or Message contains "offpath-alert name=batch_overdue:" or Message contains "offpath-alert name=held_too_long:" or Message contains "offpath-alert name=output_expiring_unharvested:" or Message contains "offpath-alert name=second_door:" or Message contains "offpath-alert name=morning_report_missing:" or Message contains "offpath-alert name=nightly_failed:") | project TimeGenerated, Message'
  }
]

var emailReceivers = [
  {
    name: 'offpath-operators'
    emailAddress: alertEmail
    useCommonAlertSchema: true
  }
]

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = {
  name: actionGroupName
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'offpath'
    enabled: true
    emailReceivers: empty(alertEmail) ? [] : emailReceivers
  }
}

resource eventAlerts 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = [
  for a in alertEvents: {
    name: 'offpath-${a.name}'
    location: location
    tags: tags
    kind: 'LogAlert'
    properties: {
      displayName: 'offpath: ${a.name}'
      description: a.description
      severity: a.severity
      enabled: true
      scopes: [
        logAnalyticsId
      ]
      evaluationFrequency: 'PT5M'
      windowSize: 'PT5M'
      criteria: {
        allOf: [
          {
            query: a.query
            timeAggregation: 'Count'
            operator: 'GreaterThan'
            threshold: 0
            failingPeriods: {
              numberOfEvaluationPeriods: 1
              minFailingPeriodsToAlert: 1
            }
          }
        ]
      }
      autoMitigate: false
      actions: {
        actionGroups: [
          actionGroup.id
        ]
      }
    }
  }
]

// The explicit morning_report_missing alert needs a running handler to say
// so; this rule also fires when nothing reported at all (the nightly
// function never ran, or the app is down): no line marked
// "offpath-event name=morning_report_written:" within a day.
resource noMorningReport 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: 'offpath-no-morning-report'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'offpath: no morning report in 24 h'
    description: 'No morning_report_written event in the last 24 hours.'
    severity: 2
    enabled: true
    scopes: [
      logAnalyticsId
    ]
    evaluationFrequency: 'PT1H'
    windowSize: 'P1D'
    criteria: {
      allOf: [
        {
          query: 'AppTraces | where Message contains "offpath-event name=morning_report_written:" | project TimeGenerated'
          timeAggregation: 'Count'
          operator: 'LessThan'
          threshold: 1
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: [
        actionGroup.id
      ]
    }
  }
}

resource deadLetters 'Microsoft.Insights/metricAlerts@2018-03-01' = {
  name: 'offpath-dead-lettered-messages'
  location: 'global'
  tags: tags
  properties: {
    description: 'Messages are in a dead-letter queue of doc-ingest or doc-ingest-heavy: a message failed MaxDeliveryCount times or expired.'
    severity: 1
    enabled: true
    scopes: [
      serviceBusId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      'odata.type': 'Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria'
      allOf: [
        {
          criterionType: 'StaticThresholdCriterion'
          name: 'dead-lettered'
          metricNamespace: 'Microsoft.ServiceBus/namespaces'
          metricName: 'DeadletteredMessages'
          dimensions: [
            {
              name: 'EntityName'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          timeAggregation: 'Maximum'
        }
      ]
    }
    autoMitigate: true
    actions: [
      {
        actionGroupId: actionGroup.id
      }
    ]
  }
}
