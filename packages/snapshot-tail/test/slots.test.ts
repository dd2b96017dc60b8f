import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
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

  it('are what both hashers hand out, threaded and inline', async () => {
    const hashers = [
      createChunkHasher(THREAD_THRESHOLD_BYTES),
      createChunkHasher(THREAD_THRESHOLD_BYTES, { crc32: true }),
      createChunkHasher(3 * 1024 * 1024),
      createChunkHasher(THREAD_THRESHOLD_BYTES, { thread: false }),
      createChunkHasher(5000),
    ];
    try {
      for (const hasher of hashers) {
        for (const slot of hasher.slots) {
          expect(slot.byteOffset % PAGE).toBe(LEAD);
          expect(slot.length).toBeLessThanOrEqual(SLOT_BYTES);
        }
        // No two slots share a byte.
        const ranges = hasher.slots.map((slot) => [slot.byteOffset, slot.byteOffset + slot.length] as const).sort((a, b) => a[0] - b[0]);
        ranges.slice(1).forEach((range, index) => expect(range[0]).toBeGreaterThanOrEqual(ranges[index]![1]));
      }
      // A thread hashes from shared memory, two slots of 1 MiB (one filled while the other is
      // hashed); inline, a chunk is hashed as it is pushed, so one slot sized for the stream does.
      expect(hashers.map((hasher) => hasher.slots.map((slot) => slot.length))).toEqual([
        [SLOT_BYTES, SLOT_BYTES],
        [SLOT_BYTES, SLOT_BYTES],
        [SLOT_BYTES],
        [SLOT_BYTES],
        [5000],
      ]);
      expect(hashers.map((hasher) => hasher.slots[0]!.buffer instanceof SharedArrayBuffer)).toEqual([true, true, false, false, false]);
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
      expect((await hasher.digest()).sha256).toBe(sha256(Buffer.concat(pieces)));
      const again = hasher.slots[0]!.subarray(0, 10);
      again.fill(9);
      hasher.push(again);
      expect((await hasher.digest()).sha256).toBe(sha256(Buffer.alloc(10, 9)));
    } finally {
      await hasher.close();
    }
  });

  it.for([
    { name: 'threaded', options: {} },
    { name: 'inline', options: { thread: false } },
  ])('takes the CRC-32 beside the SHA-256 when asked to, and starts both afresh ($name)', async ({ options }) => {
    const withCrc = createChunkHasher(THREAD_THRESHOLD_BYTES, { ...options, crc32: true });
    const without = createChunkHasher(THREAD_THRESHOLD_BYTES, options);
    try {
      const pieces: Buffer[] = [];
      for (let round = 0; round < 5; round += 1) {
        for (const hasher of [withCrc, without]) {
          const slot = hasher.slots[round % hasher.slots.length]!;
          slot.fill(round + 1, 0, 3000 + round);
          await hasher.update(slot.subarray(0, 3000 + round));
        }
        pieces.push(Buffer.alloc(3000 + round, round + 1));
      }
      const all = Buffer.concat(pieces);
      expect(withCrc.takesCrc32).toBe(true);
      expect(without.takesCrc32).toBe(false);
      expect(await withCrc.digest()).toEqual({ sha256: sha256(all), crc32: crc32(all) });
      expect(await without.digest()).toEqual({ sha256: sha256(all), crc32: null });
      expect(await withCrc.digest()).toEqual({ sha256: sha256(Buffer.alloc(0)), crc32: 0 });
    } finally {
      await withCrc.close();
      await without.close();
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
