// Agent profiles: Markdown files with `---` frontmatter, looked up project, then user, then built in.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CommandError } from './errors.js';
import { piAgentDir } from './paths.js';
import { splitLines } from '@prun/kit/py';
import { readText } from './text.js';

export const DEFAULT_PROFILE = 'general-purpose';
export const BUILTIN_PROFILES_DIR = fileURLToPath(new URL('../profiles/', import.meta.url));

export type Scalar = string | boolean | Scalar[];

export interface Profile {
  name: string;
  description: string;
  model: string | null;
  thinking: string | null;
  tools: string | null;
  disallowed_tools: string | null;
  prompt_mode: string;
  enabled: boolean;
  body: string;
  source: string;
  scope: 'project' | 'user' | 'builtin';
}

/** Split a comma-separated list, keeping commas inside quotes. */
export function splitItems(text: string): string[] {
  const items: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (const ch of text) {
    if (quote) {
      current += ch;
      if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      current += ch;
    } else if (ch === ',') {
      items.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  items.push(current);
  return items.map((item) => item.trim()).filter(Boolean);
}

export function parseScalar(raw: string): Scalar {
  const value = raw.trim();
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    try {
      const parsed: unknown = JSON.parse(value);
      if (typeof parsed === 'string') return parsed;
    } catch {
      // Not valid JSON: take the text between the quotes as it is.
    }
    return value.slice(1, -1);
  }
  if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) return value.slice(1, -1).replace(/''/g, "'");
  if (value.startsWith('[') && value.endsWith(']')) return splitItems(value.slice(1, -1)).map(parseScalar);
  if (value.toLowerCase() === 'true') return true;
  if (value.toLowerCase() === 'false') return false;
  return value;
}

/**
 * Fields and body of a Markdown file with `---` frontmatter: `key: value` lines, quoted strings,
 * true/false and `[a, b]` lists. Indented lines (nested YAML) and comments are skipped.
 */
export function parseFrontmatter(text: string): { fields: Record<string, Scalar>; body: string } {
  const lines = splitLines(text);
  if (lines.length === 0 || (lines[0] ?? '').trim() !== '---') return { fields: {}, body: text.trim() };
  const end = lines.findIndex((line, i) => i > 0 && line.trim() === '---');
  if (end < 0) return { fields: {}, body: text.trim() };
  const fields: Record<string, Scalar> = {};
  for (const line of lines.slice(1, end)) {
    if (!line.trim() || line.trimStart().startsWith('#') || line[0] === ' ' || line[0] === '\t') continue;
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    if (key) fields[key] = parseScalar(line.slice(colon + 1));
  }
  return { fields, body: lines.slice(end + 1).join('\n').trim() };
}

/** A tools field in pi's comma-separated form; null when unset or empty. */
export function toolValue(value: Scalar | undefined): string | null {
  if (value === undefined || typeof value === 'boolean') return null;
  const items = Array.isArray(value) ? value : splitItems(value);
  const joined = items
    .map((item) => String(item).trim())
    .filter(Boolean)
    .join(',');
  return joined || null;
}

function textField(fields: Record<string, Scalar>, key: string): string | null {
  const value = fields[key];
  if (value === undefined || typeof value === 'boolean' || Array.isArray(value)) return null;
  return value.trim() || null;
}

export function makeProfile(
  name: string,
  fields: Record<string, Scalar>,
  body: string,
  source: string,
  scope: Profile['scope'],
): Profile {
  return {
    name,
    description: textField(fields, 'description') ?? name,
    model: textField(fields, 'model'),
    thinking: textField(fields, 'thinking'),
    tools: toolValue(fields['tools']),
    disallowed_tools: toolValue(fields['disallowed_tools']),
    prompt_mode: (textField(fields, 'prompt_mode') ?? 'append').toLowerCase(),
    enabled: fields['enabled'] !== false,
    body,
    source,
    scope,
  };
}

export function profileDirs(cwd: string, env: NodeJS.ProcessEnv = process.env): [Profile['scope'], string][] {
  return [
    ['project', join(cwd, '.pi', 'agents')],
    ['user', join(piAgentDir(env), 'agents')],
    ['builtin', BUILTIN_PROFILES_DIR],
  ];
}

export interface ProfileFile {
  scope: Profile['scope'];
  path: string;
  entry: string;
  text: string;
}

/**
 * The merge rule, without the file system: files come highest directory first; the first
 * profile of a (case-insensitive) name wins whole, and a disabled one hides the lower ones.
 */
export function mergeProfiles(files: ProfileFile[]): Map<string, Profile> {
  const found = new Map<string, Profile>();
  for (const file of files) {
    const { fields, body } = parseFrontmatter(file.text);
    const name = textField(fields, 'name') ?? file.entry.slice(0, -'.md'.length);
    const key = name.toLowerCase();
    if (!found.has(key)) found.set(key, makeProfile(name, fields, body, file.path, file.scope));
  }
  return found;
}

export function loadProfiles(cwd: string, env: NodeJS.ProcessEnv = process.env): Map<string, Profile> {
  const files: ProfileFile[] = [];
  for (const [scope, directory] of profileDirs(cwd, env)) {
    let entries: string[];
    try {
      entries = readdirSync(directory).sort();
    } catch {
      continue;
    }
    for (const entry of entries) {
      const path = join(directory, entry);
      if (!entry.endsWith('.md')) continue;
      try {
        if (!statSync(path).isFile()) continue;
      } catch {
        continue;
      }
      const text = readText(path);
      if (text !== undefined) files.push({ scope, path, entry, text });
    }
  }
  return mergeProfiles(files);
}

export function pickProfile(profiles: Map<string, Profile>, name: string): Profile {
  const profile = profiles.get(name.toLowerCase());
  if (!profile || !profile.enabled) {
    const available = [...profiles.values()]
      .filter((p) => p.enabled)
      .map((p) => p.name)
      .sort();
    throw new CommandError(`unknown profile: ${name} (available: ${available.join(', ') || 'none'})`);
  }
  if (profile.prompt_mode !== 'append' && profile.prompt_mode !== 'replace') {
    throw new CommandError(
      `profile ${profile.name} in ${profile.source}: prompt_mode must be append or replace, got ${profile.prompt_mode}`,
    );
  }
  return profile;
}

export function callerModel(env: NodeJS.ProcessEnv): string | null {
  const model = env['PI_MODEL'] || '';
  const provider = env['PI_PROVIDER'] || '';
  if (model && provider) return `${provider}/${model}`;
  return model || null;
}

export function resolveModel(option: string | undefined, profile: Profile, env: NodeJS.ProcessEnv): string | null {
  return option || profile.model || callerModel(env);
}

export function resolveThinking(option: string | undefined, profile: Profile, env: NodeJS.ProcessEnv): string | null {
  return option || profile.thinking || env['PI_REASONING_LEVEL'] || null;
}

/** pi arguments for a profile; in replace mode the profile's prompt goes to systemPromptFile. */
export function profileArgs(profile: Profile, model: string | null, thinking: string | null, systemPromptFile: string): string[] {
  const args: string[] = [];
  if (model) args.push('--model', model);
  if (thinking) args.push('--thinking', thinking);
  if (profile.tools) args.push('--tools', profile.tools);
  if (profile.disallowed_tools) args.push('-xt', profile.disallowed_tools);
  if (profile.prompt_mode === 'replace') args.push('--system-prompt', systemPromptFile, '-nc');
  return args;
}

export function multiAgentBlock(name: string): string {
  return [
    '<multi-agent>',
    `You are the agent ${name}, started by another agent to carry out a single task.`,
    'Only your final message reaches whoever started you, so make it a complete answer',
    'that stands on its own. Nobody is available to answer questions. If a tool call is',
    'blocked because it needs approval, do not try it again; say in your final message',
    'what you could not do and why.',
    '</multi-agent>',
  ].join('\n');
}

/** The text for --append-system-prompt: the profile's prompt in append mode, then the job block. */
export function appendPrompt(profile: Profile, name: string): string {
  const parts: string[] = [];
  if (profile.prompt_mode === 'append' && profile.body) parts.push(profile.body);
  parts.push(multiAgentBlock(name));
  return parts.join('\n\n') + '\n';
}
