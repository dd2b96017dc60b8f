// The pure decisions behind the batch controls: --halt's rule, dependency waves for --dry-run,
// the one outcome rule with cancel and retries, and the cancelled FALLBACK's text.
import { describe, expect, it } from 'vitest';
import { renderFallback } from '@prun/unit-state';
import { stoppedResultText } from '../src/cancel-requests.js';
import { haltReached, parseHalt } from '../src/halt.js';
import { supervisorDeathText, unitOutcome, type DispatchEnd } from '../src/outcome.js';
import { decide, dependencyWaves } from '../src/schedule.js';

const fallback = (reason: string) => ({ unitId: 'u', fallback: true, conclusion: `INCOMPLETE; ${reason}`, files: 'unknown', openItems: reason, verification: 'none' });
const done = { unitId: 'u', fallback: false, conclusion: 'complete', files: 'none', openItems: 'none', verification: 'fake' };
const end = (patch: Partial<DispatchEnd>): DispatchEnd => ({ unitId: 'u', exitCode: 0, result: null, stopSignal: null, stderrLast: null, ...patch });

describe('--halt', () => {
  it.each([
    ['now,fail=1', { when: 'now', fail: { count: 1 } }],
    ['soon,fail=3', { when: 'soon', fail: { count: 3 } }],
    ['soon,fail=25%', { when: 'soon', fail: { percent: 25 } }],
    ['now,fail=100%', { when: 'now', fail: { percent: 100 } }],
  ])('reads %s', (text, rule) => {
    expect(parseHalt(text)).toMatchObject(rule);
  });

  it.each(['never', 'now', 'now,fail=0', 'later,fail=1', 'now,fail=0%', 'now,fail=101%', 'soon,success=1', 'now,fail=-1', 'now,fail=1.5'])('refuses %s in one line', (text) => {
    expect(() => parseHalt(text)).toThrow(/^--halt must be now,fail=N or soon,fail=N .*got: /);
  });

  it('counts units, or a percentage of all units', () => {
    expect(haltReached(parseHalt('now,fail=2'), 1, 10)).toBe(false);
    expect(haltReached(parseHalt('now,fail=2'), 2, 10)).toBe(true);
    // 25% of 10 units is 2.5: the third failure halts.
    expect(haltReached(parseHalt('soon,fail=25%'), 2, 10)).toBe(false);
    expect(haltReached(parseHalt('soon,fail=25%'), 3, 10)).toBe(true);
    expect(haltReached(parseHalt('soon,fail=50%'), 2, 4)).toBe(true);
    expect(haltReached(parseHalt('soon,fail=1%'), 0, 4)).toBe(false);
  });
});

describe('dependency waves', () => {
  it('puts each unit one wave after its latest dependency, in plan order', () => {
    const units = [
      { id: 'docs', dependsOn: ['fix'] },
      { id: 'survey', dependsOn: [] },
      { id: 'fix', dependsOn: ['survey'] },
      { id: 'lint', dependsOn: [] },
      { id: 'ship', dependsOn: ['docs', 'lint'] },
    ];
    expect(dependencyWaves(units)).toEqual([['survey', 'lint'], ['fix'], ['docs'], ['ship']]);
  });
});

describe('outcome with the controls', () => {
  it('is cancelled when prun cancel stopped it, however it ended, unless it was done first', () => {
    const stopped = unitOutcome(end({ exitCode: 143, stopSignal: 'SIGTERM', cancelled: true, result: fallback('dispatcher received SIGTERM; the Agy worker was stopped before it finished') }));
    expect(stopped).toEqual({ status: 'cancelled', note: 'cancelled by prun cancel: dispatcher received SIGTERM; the Agy worker was stopped before it finished' });
    expect(unitOutcome(end({ exitCode: null, stopSignal: 'SIGTERM', cancelled: true })).status).toBe('cancelled');
    expect(unitOutcome(end({ exitCode: 75, cancelled: true, result: fallback('the Agy Gemini quota group is exhausted (resets later).') })).status).toBe('cancelled');
    expect(unitOutcome(end({ exitCode: 0, stopSignal: 'SIGTERM', cancelled: true, result: done }))).toEqual({ status: 'done' });
    // The same stop without a cancel is an interrupt, as before.
    expect(unitOutcome(end({ exitCode: 143, stopSignal: 'SIGTERM', result: fallback('dispatcher received SIGTERM') })).status).toBe('interrupted');
  });

  it('names the halt in the note of a unit --halt now stopped, and only of one it interrupted', () => {
    const stopped = unitOutcome(end({ exitCode: 143, stopSignal: 'SIGTERM', haltedBy: '--halt now,fail=1', result: fallback('dispatcher received SIGTERM; the Agy worker was stopped before it finished') }));
    expect(stopped).toEqual({ status: 'interrupted', note: 'stopped by --halt now,fail=1: dispatcher received SIGTERM; the Agy worker was stopped before it finished' });
    expect(unitOutcome(end({ exitCode: 0, stopSignal: 'SIGTERM', haltedBy: '--halt now,fail=1', result: done }))).toEqual({ status: 'done' });
    expect(unitOutcome(end({ exitCode: 3, stopSignal: 'SIGTERM', haltedBy: '--halt', result: fallback('Agy exited with code 3') })).status).toBe('interrupted');
  });

  it('marks a failed or invalid end for a retry only while retries are left', () => {
    expect(unitOutcome(end({ exitCode: 3, result: fallback('Agy exited with code 3'), retriesLeft: 1 }))).toMatchObject({ status: 'failed', retry: true });
    expect(unitOutcome(end({ exitCode: 3, result: fallback('Agy exited with code 3'), retriesLeft: 0 }))).toEqual({ status: 'failed', note: 'Agy exited with code 3' });
    expect(unitOutcome(end({ exitCode: 0, result: { ...done, files: null }, retriesLeft: 2 }))).toMatchObject({ status: 'invalid', retry: true });
    // Never a retry for what is not a failure: a quota deferral, an interrupt.
    expect(unitOutcome(end({ exitCode: 75, result: fallback('the Agy Gemini quota group is exhausted (resets later).'), retriesLeft: 2 })).status).toBe('deferred');
    expect(unitOutcome(end({ exitCode: 130, stopSignal: 'SIGINT', result: fallback('dispatcher received SIGINT'), retriesLeft: 2 })).status).toBe('interrupted');
  });

  it("gives the supervisor's death as the reason of a unit it took with it, not the unit's last log line", () => {
    const died = "the batch's supervisor (pid 41) died of SIGKILL";
    const routing = 'dispatch-task-agy: MODEL-FALLBACK from=a to=b reason=template-unlisted';
    expect(unitOutcome(end({ exitCode: 137, stderrLast: routing, hostDeath: died }))).toEqual({ status: 'failed', note: `${died} before this unit published a result` });
    // What was published, or the batch's own stop, still decides.
    expect(unitOutcome(end({ exitCode: 137, result: done, hostDeath: died }))).toEqual({ status: 'done' });
    expect(unitOutcome(end({ exitCode: 137, stopSignal: 'SIGTERM', hostDeath: died })).status).toBe('interrupted');
    expect(unitOutcome(end({ exitCode: 137, hostDeath: died, retriesLeft: 1 }))).toMatchObject({ status: 'failed', retry: true });
    // Without a host's death, a dispatcher's own end quotes its last line as before.
    expect(unitOutcome(end({ exitCode: 2, stderrLast: 'dispatch-task-agy: prompt file not found: /p' }))).toEqual({
      status: 'failed',
      note: 'dispatcher exited with code 2 and published no result: dispatch-task-agy: prompt file not found: /p',
    });
    expect(supervisorDeathText({ pid: 41, signal: 'SIGKILL', code: null })).toBe(died);
    expect(supervisorDeathText({ pid: 41, signal: null, code: 70 })).toBe("the batch's supervisor (pid 41) exited with code 70");
  });

  it('fails the dependents of a cancelled unit', () => {
    const decision = decide({
      units: [
        { id: 'a', dependsOn: [] },
        { id: 'b', dependsOn: ['a'] },
      ],
      status: new Map([
        ['a', 'cancelled'],
        ['b', 'queued'],
      ]),
      retryAt: new Map(),
      running: 0,
      jobs: 2,
      now: 0,
      startingAllowed: true,
    });
    expect(decision.failForDependency).toEqual([['b', 'a']]);
    expect(decision.start).toEqual([]);
  });
});

describe('the FALLBACK of a cancelled unit', () => {
  it("names the cancel in the dispatcher's reason lines and keeps the worker's output", () => {
    const original = renderFallback({ unitId: 'u', reason: 'dispatcher received SIGTERM', stdout: '{"event": "init"}' });
    const text = stoppedResultText(original, 'cancelled by prun cancel: dispatcher received SIGTERM')!;
    expect(text.split('\n').slice(0, 5)).toEqual([
      original.split('\n')[0],
      'Conclusion: INCOMPLETE; cancelled by prun cancel: dispatcher received SIGTERM',
      'Files: unknown',
      'Open items: cancelled by prun cancel: dispatcher received SIGTERM',
      'Verification: none (dispatcher fallback)',
    ]);
    expect(text).toContain('{"event": "init"}');
    expect(stoppedResultText('no header here', 'x')).toBeNull();
  });
});
