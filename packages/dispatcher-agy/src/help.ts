// The dispatcher's usage line and --help, rendered from its declaration (spec.ts).
import { renderHelp, usageLine } from '@prun/kit/spec';
import { SPEC } from './spec.js';

export const USAGE = usageLine(SPEC);

export const HELP = renderHelp(SPEC);
