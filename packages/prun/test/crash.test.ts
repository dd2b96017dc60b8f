// The randomized crash test: a batch with dependencies, its driver SIGKILLed at random moments
// again and again (during start-up, while laying the directory out, between ledger lines, with
// dispatchers in flight), each kill followed by `prun batch --resume`. At the end every unit is
// done and no unit's worker was started twice (counted from fake agy's call log).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { latestStatus, ledger, prun, sandbox, workerCalls, workerStarts, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

const KILLS = 50;
/**
 * Fewer kills than KILLS are enough when the batch finished first: its supervisor runs the
 * handed-over units on while the driver is dead, so a batch of instant units can be done in
 * fewer than KILLS driver lives. This many kills still land at every stage.
 */
const MIN_KILLS = 20;

/**
 * Layers of units, each depending on two of the layer before. Wide and deep enough that the
 * batch outlives MIN_KILLS driver lives with room to spare: 29 units in 6 layers were done in
 * 18-25 lives on a fast 2-core machine once the supervisor kept a spare chain (CI saw 18).
 */
function layeredPlan(): Array<Record<string, unknown>> {
  const units: Array<Record<string, unknown>> = [];
  const widths = [12, 12, 10, 8, 6, 4, 2, 1];
  let previous: string[] = [];
  widths.forEach((width, layer) => {
    const ids = Array.from({ length: width }, (_, i) => `L${layer}u${i}`);
    ids.forEach((id, i) => {
      const deps = previous.length === 0 ? [] : [previous[i % previous.length]!, previous[(i + 1) % previous.length]!];
      units.push({ id, prompt: `UNIT-ID:${id} instant`, model: 'fake-model-x', ...(deps.length > 0 ? { depends_on: [...new Set(deps)] } : {}) });
    });
    previous = ids;
  });
  return units;
}

const lineCount = (path: string): number => {
  try {
    return readFileSync(path, 'utf8').split('\n').length - 1;
  } catch {
    return 0;
  }
};

it(`finishes a batch with dependencies after up to ${KILLS} SIGKILLs at random moments (at least ${MIN_KILLS}), no worker started twice`, async () => {
  box = sandbox();
  const work = join(box.root, 'work');
  mkdirSync(work);
  const units = layeredPlan();
  writeFileSync(join(work, 'plan.json'), JSON.stringify({ units }));
  const dir = join(work, 'fanout');
  const ledgerPath = join(dir, 'ledger.jsonl');
  let kills = 0;
  let cycles = 0;
  while (kills < KILLS) {
    cycles += 1;
    const created = existsSync(join(dir, 'plan.json'));
    const args = created ? ['batch', '--resume', 'fanout', '--jobs', '3'] : ['batch', 'plan.json', '--dir', 'fanout', '--jobs', '3'];
    const child = prun(args, { env: box.env, cwd: work });
    let exited = false;
    void child.then(() => {
      exited = true;
    });
    // The moment: a random delay into start-up, or a random number of new ledger lines.
    const base = lineCount(ledgerPath);
    const lines = Math.floor(Math.random() * 5);
    if (lines === 0) {
      await new Promise((resolveLater) => setTimeout(resolveLater, Math.random() * 400));
    } else {
      while (!exited && lineCount(ledgerPath) < base + lines) await new Promise((resolveLater) => setTimeout(resolveLater, 5));
    }
    child.kill('SIGKILL');
    const result = await child;
    if (result.signal === 'SIGKILL') kills += 1;
    else {
      expect(result.exitCode, String(result.stderr)).toBe(0);
      // A driver that lived to the end finished the batch: nothing is left for a kill to hit.
      if (Object.values(latestStatus(dir)).every((status) => status === 'done')) break;
    }
    if (cycles > KILLS * 3) break;
  }
  expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
  const last = await prun(['batch', '--resume', 'fanout', '--jobs', '3'], { env: box.env, cwd: work });
  expect(last.exitCode, String(last.stderr)).toBe(0);
  const ids = units.map((u) => u.id as string);
  expect(latestStatus(dir)).toEqual(Object.fromEntries(ids.map((id) => [id, 'done'])));
  // Counted from the start log: a worker killed before it read its prompt counts too.
  expect(workerStarts(box.logDir)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
  expect(workerCalls(box.logDir)).toHaveLength(ids.length);
  // The kills did land mid-flight: dispatchers were adopted or settled after a restart.
  const notes = ledger(dir).map((l) => l.note ?? '');
  const recovered = notes.filter((n) => /^adopted|^settled after restart|dispatching again/.test(n)).length;
  console.log(`crash test: ${cycles} cycles, ${kills} kills, ${recovered} recoveries (${notes.filter((n) => n.startsWith('adopted')).length} adoptions)`);
  expect(recovered).toBeGreaterThan(0);
}, 240_000);
