export { type Selector, type PromqlRefs, promqlRefs, metricNamesInPromql } from './promql';
export {
  type ExprRef,
  alertExprs,
  dashboardExprs,
  checkExprsAgainstCatalog,
  checkExprsAgainstScrapes,
  checkRunningServices,
} from './metric-refs';
