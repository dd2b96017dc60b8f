// @prun/kit/py: filled in by the kit work (see packages/kit/README.md).
export {};
