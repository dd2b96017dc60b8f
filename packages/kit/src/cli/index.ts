// @prun/kit/cli: filled in by the kit work (see packages/kit/README.md).
export {};
