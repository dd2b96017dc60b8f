// The dispatcher's usage line and --help, rendered from its declaration (spec.ts) when first
// asked for: rendering the help costs a few milliseconds that a dispatch does not need.
import { renderHelp, usageLine } from '@prun/kit/spec';
import { SPEC } from './spec.js';

let usage: string | undefined;
let help: string | undefined;

export function usageText(): string {
  usage ??= usageLine(SPEC);
  return usage;
}

export function helpText(): string {
  help ??= renderHelp(SPEC);
  return help;
}
