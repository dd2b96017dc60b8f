import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SLOT_BYTES, THREAD_THRESHOLD_BYTES, createChunkHasher, pageAlignedSlots } from '../src/hasher.js';

// The kernel copies page-cache pages into and out of a buffer that starts 16 bytes into a page
// (where a plain large allocation starts) about three times slower, so every slot a read or a
// write touches starts one page less those 16 bytes into its block: on a page boundary.
const PAGE = 4096;
const LEAD = PAGE - 16;

describe('reusable slots', () => {
  it('start on page boundaries of the allocation, side by side, never overlapping', () => {
    const { memory, slots } = pageAlignedSlots((bytes) => new SharedArrayBuffer(bytes), 1024 * 1024, 4);
    expect(slots).toHaveLength(4);
    slots.forEach((slot, index) => {
      expect(slot.buffer).toBe(memory);
      expect(slot.byteOffset).toBe(LEAD + index * 1024 * 1024);
      expect(slot.byteOffset % PAGE).toBe(LEAD);
      expect(slot.length).toBe(1024 * 1024);
    });
    expect(memory.byteLength).toBe(LEAD + 4 * 1024 * 1024);
  });

  it('are what both hashers hand out, threaded and inline, for every stream', async () => {
    const hashers = [
      createChunkHasher(THREAD_THRESHOLD_BYTES),
      createChunkHasher(3 * 1024 * 1024),
      createChunkHasher(5000),
      createChunkHasher(THREAD_THRESHOLD_BYTES, 2),
      createChunkHasher(3 * 1024 * 1024, 2),
    ];
    try {
      for (const hasher of hashers) {
        expect(hasher.slots).toBe(hasher.slotsOf(0));
        const all = Array.from({ length: hasher.streams }, (_, stream) => hasher.slotsOf(stream)).flat();
        for (const slot of all) {
          expect(slot.byteOffset % PAGE).toBe(LEAD);
          expect(slot.length).toBeLessThanOrEqual(SLOT_BYTES);
        }
        // No two slots share a byte.
        const ranges = all.map((slot) => [slot.byteOffset, slot.byteOffset + slot.length] as const).sort((a, b) => a[0] - b[0]);
        ranges.slice(1).forEach((range, index) => expect(range[0]).toBeGreaterThanOrEqual(ranges[index]![1]));
      }
      // The snapshot's two threaded streams together hold no more than one stream's four slots.
      const two = hashers[3]!;
      const bytes = [0, 1].flatMap((stream) => two.slotsOf(stream)).reduce((sum, slot) => sum + slot.length, 0);
      expect(bytes).toBeLessThanOrEqual(4 * SLOT_BYTES);
      expect(() => two.slotsOf(2)).toThrow(RangeError);
    } finally {
      for (const hasher of hashers) await hasher.close();
    }
  });
});

describe('the hashing thread', () => {
  const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

  it('hashes every slot in flight at once, in push order, and starts afresh after a digest', async () => {
    const hasher = createChunkHasher(THREAD_THRESHOLD_BYTES);
    try {
      const pieces = hasher.slots.map((slot, index) => {
        slot.fill(index + 1, 0, 1000 + index);
        return slot.subarray(0, 1000 + index);
      });
      const tickets = pieces.map((piece) => hasher.push(piece));
      // Pushing returned at once; the thread catches up with all of them.
      expect(tickets).toEqual(pieces.map((_, index) => index));
      await Promise.all(tickets.map((ticket) => hasher.wait(ticket)));
      expect(tickets.every((ticket) => hasher.waitSync(ticket, 0))).toBe(true);
      expect(await hasher.digest()).toBe(sha256(Buffer.concat(pieces)));
      const again = hasher.slots[0]!.subarray(0, 10);
      again.fill(9);
      hasher.push(again);
      expect(await hasher.digest()).toBe(sha256(Buffer.alloc(10, 9)));
    } finally {
      await hasher.close();
    }
  });

  it.for([
    { name: 'threaded', expected: THREAD_THRESHOLD_BYTES },
    { name: 'inline', expected: 3 * 1024 * 1024 },
  ])('keeps two streams apart when their pieces interleave ($name)', async ({ expected }) => {
    const hasher = createChunkHasher(expected, 2);
    try {
      const first: Buffer[] = [];
      const second: Buffer[] = [];
      for (let round = 0; round < 5; round += 1) {
        const [a, b] = [hasher.slotsOf(0)[round % hasher.slotsOf(0).length]!, hasher.slotsOf(1)[round % hasher.slotsOf(1).length]!];
        a.fill(round + 1, 0, 3000);
        b.fill(round + 101, 0, 2000);
        first.push(Buffer.from(a.subarray(0, 3000)));
        second.push(Buffer.from(b.subarray(0, 2000)));
        await hasher.wait(hasher.push(a.subarray(0, 3000), 0));
        await hasher.update(b.subarray(0, 2000), 1);
      }
      // Digests in either order, each of its own stream only.
      expect(await hasher.digest(1)).toBe(sha256(Buffer.concat(second)));
      expect(await hasher.digest(0)).toBe(sha256(Buffer.concat(first)));
      expect(await hasher.digest(1)).toBe(sha256(Buffer.alloc(0)));
      expect(() => hasher.push(hasher.slotsOf(1)[0]!.subarray(0, 1), 2)).toThrow(RangeError);
    } finally {
      await hasher.close();
    }
  });

  it('refuses a chunk outside its slots, and a wait on a closed hasher ends instead of hanging', async () => {
    const hasher = createChunkHasher(THREAD_THRESHOLD_BYTES);
    expect(() => hasher.push(Buffer.alloc(10))).toThrow(TypeError);
    await hasher.close();
    // A ticket that will never be hashed: the wait notices the hasher is gone.
    await expect(hasher.wait(5)).rejects.toThrow('the hasher is closed');
    await expect(hasher.digest()).rejects.toThrow('the hasher is closed');
  });
});
