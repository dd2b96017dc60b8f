export {
  type UnitStatus,
  type MonitorEvent,
  type ClassifySettings,
  type UnitMemory,
  type UnitFacts,
  type ResultFacts,
  type TailFacts,
  type DispatchLiveness,
  type Classification,
  type EventContext,
  initialMemory,
  classifyUnit,
  formatStatus,
  decideEvent,
  eventExitCode,
  unitName,
} from './classify.js';
export { isAgentCaller } from './cli-common.js';
export { liveViewOn, formatElapsed, formatBytes, GrowthMeter, GROWTH_WINDOW_MS } from './live.js';
export { UsageError, readSecondsSetting, readSettings, MONITOR_ENV, GATHER_ENV, type MonitorSettings, type GatherSettings } from './settings.js';
export { observeUnit, probeDispatch, statRegularFile, type UnitObservation, type FileFacts } from './observe.js';
export { Waker, type WatchFunction } from './watch.js';
export { MonitorRun, type MonitorOptions, type MonitorRecord, type UnitReport } from './monitor.js';
export { GatherRun, landingOf, donePath, type GatherOptions, type GatherRecord } from './gather.js';
export { WatchLoop, type LoopOptions } from './loop.js';
