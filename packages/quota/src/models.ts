// Model names, pools and Python string semantics have one home: @prun/model-resolve.
export { DEFAULT_MODEL, SECOND_MODEL, modelPool, pyStrip, expandUser, expandVars } from '@prun/model-resolve';
export type { ModelPool as Pool } from '@prun/model-resolve';
