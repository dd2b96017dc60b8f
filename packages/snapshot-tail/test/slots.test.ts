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
    const hashers = [createChunkHasher(THREAD_THRESHOLD_BYTES), createChunkHasher(3 * 1024 * 1024), createChunkHasher(5000)];
    try {
      for (const hasher of hashers) {
        expect(hasher.slots.length).toBeGreaterThan(0);
        for (const slot of hasher.slots) {
          expect(slot.byteOffset % PAGE).toBe(LEAD);
          expect(slot.length).toBeLessThanOrEqual(SLOT_BYTES);
        }
      }
    } finally {
      for (const hasher of hashers) await hasher.close();
    }
  });
});
