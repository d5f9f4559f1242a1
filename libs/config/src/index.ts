export { type FieldSpec, str, int, timerMs, MAX_TIMER_MS, MAX_POLL_INTERVAL_MS, MAX_SESSION_TIMEOUT_MS, STALL_TO_POLL_INTERVAL_MS, bool, oneOf, list, json, url, urls } from './fields';
export { type ConfigSchema, type ConfigOf, type ConfigCheck, type LoadOptions, loadConfig, describeConfig, setTogether } from './load-config';
export { type UnknownSetting, type WarningLog, unknownSettings, warnIgnoredSettings, TYPO_DISTANCE } from './unknown-settings';
export { parseCgroupMemoryLimit } from './container';
