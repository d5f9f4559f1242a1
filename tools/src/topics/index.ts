export { type TopicPlan, type ClusterSettings, LOCAL_CLUSTER, pipelineTopicSpecs, planTopics } from './plan';
export {
  type TopicProblem,
  type TopicReport,
  type ProvisionReport,
  type ProvisionOptions,
  provisionTopics,
  inspect,
  formatReport,
} from './provision';
