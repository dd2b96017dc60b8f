// Profiles as pi sees them: the prompt in append and replace modes, tool lists, and precedence.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemPromptOf, toolNamesOf, useFakeLlm } from './helpers.js';

const { fresh, llm } = useFakeLlm();
const requestWith = (marker: string) => llm().requests.find((r) => r.lastUserText.includes(marker));

describe('profiles reach pi', () => {
  it('append mode adds the profile prompt, replace mode replaces pi’s own, tools and precedence apply', async () => {
    const w = fresh();
    const user = join(w.agentDir, 'agents');
    const project = join(w.cwd, '.pi', 'agents');
    mkdirSync(user, { recursive: true });
    mkdirSync(project, { recursive: true });
    writeFileSync(join(user, 'reviewer.md'), '---\nname: reviewer\ntools: read\n---\nUSER-PROFILE-MARKER\n');
    writeFileSync(join(project, 'reviewer.md'), '---\nname: Reviewer\ntools: [read, bash]\nmodel: fake/fake-model\n---\nPROJECT-PROFILE-MARKER\n');
    writeFileSync(join(user, 'solo.md'), '---\nprompt_mode: replace\ndisallowed_tools: bash\n---\nSOLO-REPLACE-MARKER\n');

    const a = await w.job(['run', '--background', '--profile', 'REVIEWER', '--name', 'pa', 'profile-a-marker']);
    const b = await w.job(['run', '--background', '--profile', 'solo', '--name', 'pb', 'profile-b-marker']);
    expect([a.code, b.code]).toEqual([0, 0]);
    const [waitA, waitB, plain] = await Promise.all([
      w.job(['wait', 'pa']),
      w.job(['wait', 'pb']),
      w.job(['run', '--name', 'pc', 'profile-c-marker']),
    ]);
    expect(waitA.stdout).toContain('profile: Reviewer\n');
    expect(waitB.stdout).toContain('profile: solo\n');
    expect([waitA.code, waitB.code, plain.code]).toEqual([0, 0, 0]);

    const promptA = systemPromptOf(requestWith('profile-a-marker')!);
    const promptB = systemPromptOf(requestWith('profile-b-marker')!);
    const promptC = systemPromptOf(requestWith('profile-c-marker')!);
    // Append: pi's own prompt, then the project profile (which hides the user one whole), then the job block.
    expect(promptA).toContain('PROJECT-PROFILE-MARKER');
    expect(promptA).not.toContain('USER-PROFILE-MARKER');
    expect(promptA).toContain('You are the agent pa,');
    expect(promptA.indexOf('PROJECT-PROFILE-MARKER')).toBeGreaterThan(0);
    expect(toolNamesOf(requestWith('profile-a-marker')!)).toEqual(['bash', 'read']);
    expect(JSON.parse(w.read('pa', 'job.json'))).toMatchObject({ model: 'fake/fake-model', pi_args: ['--model', 'fake/fake-model', '--tools', 'read,bash'] });

    // Replace: the profile's prompt instead of pi's own; the job block still follows.
    expect(promptB.startsWith('SOLO-REPLACE-MARKER')).toBe(true);
    expect(promptB).toContain('You are the agent pb,');
    const piOwnOpening = promptC.slice(0, 60);
    expect(promptC).toContain('You are the agent pc,');
    expect(promptA.startsWith(piOwnOpening)).toBe(true);
    expect(promptB).not.toContain(piOwnOpening);
    expect(w.read('pb', 'system-prompt.md')).toBe('SOLO-REPLACE-MARKER\n');
    expect(toolNamesOf(requestWith('profile-b-marker')!)).not.toContain('bash');
    expect(toolNamesOf(requestWith('profile-c-marker')!)).toContain('bash');
  });
});
