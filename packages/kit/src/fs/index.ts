// @prun/kit/fs: filled in by the kit work (see packages/kit/README.md).
export { type FlockAttempt, FlockUnavailableError, tryFlock } from './flock.js';
