// @prun/kit/fs: filled in by the kit work (see packages/kit/README.md).
export {};
