// offpath's alerts and where they go.
//
// Log alerts read offpath's own alert events. Package alert writes each as
// one error-level JSON log line with a stable "alert" field, e.g.
//   {"level":"error","alert":"batch_failed","tenant":"...","job":"...","message":"..."}
// The Functions host forwards the handler's stdout to Application Insights,
// so the lines land in the workspace's AppTraces table (Message column); the
// queries match the "alert":"<name>" pair in it. One rule per kind of
// trouble, so that each has its own severity and history; a last rule
// catches alert names added later.
// A metric alert watches dead-lettered messages: the dead-letter queues hold
// only real infrastructure failures (and expired backlog), never answered
// questions, so any dead letter deserves a look.

param location string
param tags object
param actionGroupName string
param alertEmail string
param logAnalyticsId string
param serviceBusId string

// The alert names the rules above the last one select.
var knownAlerts = [
  'batch_expired'
  'batch_failed'
  'azure_auth'
  'batch_overdue'
  'held_too_long'
  'output_expiring_unharvested'
  'second_door'
  'morning_report_missing'
  'nightly_failed'
]

var alertEvents = [
  {
    name: 'job-expired'
    severity: 2
    description: 'A batch job expired: its unfinished lines were not processed within 24 h (partial output is still harvested and billed).'
    filter: 'Message contains \'"alert":"batch_expired"\''
  }
  {
    name: 'job-failed'
    severity: 1
    description: 'A batch job failed (validation or service error), or offpath\'s credential is refused: the tenant\'s work was not done.'
    filter: 'Message contains \'"alert":"batch_failed"\' or Message contains \'"alert":"azure_auth"\''
  }
  {
    name: 'job-overdue'
    severity: 2
    description: 'A batch job is past its completion window, held for quota too long, or its output is about to expire unharvested.'
    filter: 'Message contains \'"alert":"batch_overdue"\' or Message contains \'"alert":"held_too_long"\' or Message contains \'"alert":"output_expiring_unharvested"\''
  }
  {
    name: 'second-door'
    severity: 0
    description: 'A batch or file exists on the Azure OpenAI account that offpath did not create: someone has another door to the models.'
    filter: 'Message contains \'"alert":"second_door"\''
  }
  {
    name: 'morning-report-missing'
    severity: 2
    description: 'The nightly ticket summaries failed, or did not produce their morning report by the deadline.'
    filter: 'Message contains \'"alert":"morning_report_missing"\' or Message contains \'"alert":"nightly_failed"\''
  }
  {
    name: 'other-alert'
    severity: 2
    description: 'Any other offpath alert (output lost, counts mismatch, harvest failing, and names added later).'
    filter: 'Message contains \'"alert":"\' and not(${join(map(knownAlerts, n => 'Message contains \'"alert":"${n}"\''), ' or ')})'
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
            // Error level only: the same name also appears in the warning
            // that a webhook delivery failed.
            query: 'AppTraces | where Message contains \'"level":"error"\' | where ${a.filter} | project TimeGenerated, Message'
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

// The explicit morning_report_missing event needs a running handler to say
// so; this rule also fires when nothing reported at all (the nightly
// function never ran, or the app is down): no "morning_report_written"
// event within a day.
resource noMorningReport 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: 'offpath-no-morning-report'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'offpath: no morning report in 24 h'
    description: 'No "morning_report_written" event in the last 24 hours.'
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
          query: 'AppTraces | where Message contains \'"event":"morning_report_written"\' | project TimeGenerated'
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
