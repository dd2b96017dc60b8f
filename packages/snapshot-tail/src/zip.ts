// The ZIP records a snapshot needs (APPNOTE.TXT 6.3): local and central headers for STORED
// members, the ZIP64 extra field, and the end records. Pure functions over buffers: the writer
// in archive.ts builds them, the validator parses what is on disk with the same knowledge of the
// format but none of the writer's state, so a wrong header is caught by reading it back (and the
// tests also read every archive with yauzl and Info-ZIP).

export const SIG = {
  local: 0x04034b50,
  central: 0x02014b50,
  eocd: 0x06054b50,
  zip64Eocd: 0x06064b50,
  zip64Locator: 0x07064b50,
} as const;

export const METHOD_STORED = 0;
const VERSION_DEFAULT = 20;
const VERSION_ZIP64 = 45;
// "Made by" Unix (3) so the external attributes carry a Unix mode.
const MADE_BY_UNIX = 3 << 8;
const ZIP64_EXTRA_ID = 0x0001;
const U32_MAX = 0xffffffff;
const U16_MAX = 0xffff;

export const LOCAL_HEADER_BYTES = 30;
export const CENTRAL_HEADER_BYTES = 46;
export const EOCD_BYTES = 22;
export const ZIP64_EOCD_BYTES = 56;
export const ZIP64_LOCATOR_BYTES = 20;
/** The EOCD may be followed by a comment of up to 65535 bytes. */
export const EOCD_SEARCH_BYTES = EOCD_BYTES + U16_MAX;

/** MS-DOS date and time fields of `date` in local time (the ZIP convention). */
export function dosDateTime(date: Date): { time: number; date: number } {
  const year = Math.min(Math.max(date.getFullYear(), 1980), 2107);
  return {
    time: (date.getHours() << 11) | (date.getMinutes() << 5) | Math.floor(date.getSeconds() / 2),
    date: ((year - 1980) << 9) | ((date.getMonth() + 1) << 5) | date.getDate(),
  };
}

/** What the writer knows about one STORED member. */
export interface MemberRecord {
  name: string;
  size: number;
  crc32: number;
  localHeaderOffset: number;
  /** Always give this member ZIP64 sizes (as the Python original did for tail.bin). */
  forceZip64: boolean;
  mtime: Date;
  mode: number;
}

function nameBytes(name: string): Buffer {
  return Buffer.from(name, 'utf8');
}

function needsUtf8Flag(name: string): boolean {
  return !/^[\x20-\x7e]*$/.test(name);
}

/**
 * The local header of a STORED member. With `forceZip64` the 32-bit sizes are 0xffffffff and a
 * ZIP64 extra field carries the real ones, so a member of any size has the same layout and its
 * header can be rewritten in place once the size and CRC are known (`zip64SizesOffset`).
 */
export function localHeader(member: Omit<MemberRecord, 'localHeaderOffset'>): Buffer {
  const name = nameBytes(member.name);
  const extraLength = member.forceZip64 ? 20 : 0;
  const header = Buffer.alloc(LOCAL_HEADER_BYTES + name.length + extraLength);
  const { time, date } = dosDateTime(member.mtime);
  header.writeUInt32LE(SIG.local, 0);
  header.writeUInt16LE(member.forceZip64 ? VERSION_ZIP64 : VERSION_DEFAULT, 4);
  header.writeUInt16LE(needsUtf8Flag(member.name) ? 0x0800 : 0, 6);
  header.writeUInt16LE(METHOD_STORED, 8);
  header.writeUInt16LE(time, 10);
  header.writeUInt16LE(date, 12);
  header.writeUInt32LE(member.crc32 >>> 0, 14);
  header.writeUInt32LE(member.forceZip64 ? U32_MAX : member.size, 18);
  header.writeUInt32LE(member.forceZip64 ? U32_MAX : member.size, 22);
  header.writeUInt16LE(name.length, 26);
  header.writeUInt16LE(extraLength, 28);
  name.copy(header, LOCAL_HEADER_BYTES);
  if (member.forceZip64) {
    const extra = LOCAL_HEADER_BYTES + name.length;
    header.writeUInt16LE(ZIP64_EXTRA_ID, extra);
    header.writeUInt16LE(16, extra + 2);
    header.writeBigUInt64LE(BigInt(member.size), extra + 4);
    header.writeBigUInt64LE(BigInt(member.size), extra + 12);
  }
  return header;
}

/** The central directory entry of a STORED member; ZIP64 fields where forced or needed. */
export function centralHeader(member: MemberRecord): Buffer {
  const name = nameBytes(member.name);
  const zip64Sizes = member.forceZip64 || member.size >= U32_MAX;
  const zip64Offset = member.forceZip64 || member.localHeaderOffset >= U32_MAX;
  const extraLength = zip64Sizes || zip64Offset ? 4 + (zip64Sizes ? 16 : 0) + (zip64Offset ? 8 : 0) : 0;
  const header = Buffer.alloc(CENTRAL_HEADER_BYTES + name.length + extraLength);
  const version = extraLength > 0 ? VERSION_ZIP64 : VERSION_DEFAULT;
  const { time, date } = dosDateTime(member.mtime);
  header.writeUInt32LE(SIG.central, 0);
  header.writeUInt16LE(MADE_BY_UNIX | version, 4);
  header.writeUInt16LE(version, 6);
  header.writeUInt16LE(needsUtf8Flag(member.name) ? 0x0800 : 0, 8);
  header.writeUInt16LE(METHOD_STORED, 10);
  header.writeUInt16LE(time, 12);
  header.writeUInt16LE(date, 14);
  header.writeUInt32LE(member.crc32 >>> 0, 16);
  header.writeUInt32LE(zip64Sizes ? U32_MAX : member.size, 20);
  header.writeUInt32LE(zip64Sizes ? U32_MAX : member.size, 24);
  header.writeUInt16LE(name.length, 28);
  header.writeUInt16LE(extraLength, 30);
  // comment length, disk number start, internal attributes: 0
  header.writeUInt32LE(((member.mode & 0xffff) << 16) >>> 0, 38);
  header.writeUInt32LE(zip64Offset ? U32_MAX : member.localHeaderOffset, 42);
  name.copy(header, CENTRAL_HEADER_BYTES);
  if (extraLength > 0) {
    let at = CENTRAL_HEADER_BYTES + name.length;
    header.writeUInt16LE(ZIP64_EXTRA_ID, at);
    header.writeUInt16LE(extraLength - 4, at + 2);
    at += 4;
    if (zip64Sizes) {
      header.writeBigUInt64LE(BigInt(member.size), at);
      header.writeBigUInt64LE(BigInt(member.size), at + 8);
      at += 16;
    }
    if (zip64Offset) header.writeBigUInt64LE(BigInt(member.localHeaderOffset), at);
  }
  return header;
}

/** The end records: ZIP64 end record and locator when an offset or size needs them, then the EOCD. */
export function endRecords(input: { entries: number; centralOffset: number; centralSize: number }): Buffer {
  const zip64 = input.centralOffset >= U32_MAX || input.centralSize >= U32_MAX || input.entries >= U16_MAX;
  const parts: Buffer[] = [];
  if (zip64) {
    const record = Buffer.alloc(ZIP64_EOCD_BYTES);
    record.writeUInt32LE(SIG.zip64Eocd, 0);
    record.writeBigUInt64LE(BigInt(ZIP64_EOCD_BYTES - 12), 4);
    record.writeUInt16LE(MADE_BY_UNIX | VERSION_ZIP64, 12);
    record.writeUInt16LE(VERSION_ZIP64, 14);
    record.writeBigUInt64LE(BigInt(input.entries), 24);
    record.writeBigUInt64LE(BigInt(input.entries), 32);
    record.writeBigUInt64LE(BigInt(input.centralSize), 40);
    record.writeBigUInt64LE(BigInt(input.centralOffset), 48);
    const locator = Buffer.alloc(ZIP64_LOCATOR_BYTES);
    locator.writeUInt32LE(SIG.zip64Locator, 0);
    locator.writeBigUInt64LE(BigInt(input.centralOffset + input.centralSize), 8);
    locator.writeUInt32LE(1, 16);
    parts.push(record, locator);
  }
  const eocd = Buffer.alloc(EOCD_BYTES);
  eocd.writeUInt32LE(SIG.eocd, 0);
  eocd.writeUInt16LE(Math.min(input.entries, U16_MAX), 8);
  eocd.writeUInt16LE(Math.min(input.entries, U16_MAX), 10);
  eocd.writeUInt32LE(Math.min(input.centralSize, U32_MAX), 12);
  eocd.writeUInt32LE(Math.min(input.centralOffset, U32_MAX), 16);
  parts.push(eocd);
  return Buffer.concat(parts);
}

/** A malformed archive; the validator reports it as `archive did not validate: <message>`. */
export class ZipFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ZipFormatError';
  }
}

/** Where the central directory is, from the end records. */
export interface DirectoryLocation {
  entries: number;
  centralOffset: number;
  centralSize: number;
  /** Where the end records begin: no member data may reach past the central directory. */
  endOffset: number;
}

function safeNumber(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new ZipFormatError(`${what} is out of range`);
  return Number(value);
}

/**
 * Find the EOCD in `tail` (the last bytes of a file of `fileSize` bytes) and read the directory's
 * position from it; `readAt` fetches the ZIP64 end record when the EOCD points to one.
 */
export async function locateDirectory(
  tail: Buffer,
  fileSize: number,
  readAt: (position: number, length: number) => Promise<Buffer>,
): Promise<DirectoryLocation> {
  const tailStart = fileSize - tail.length;
  let at = -1;
  for (let i = tail.length - EOCD_BYTES; i >= 0; i -= 1) {
    // The comment length must account for exactly the bytes after the record.
    if (tail.readUInt32LE(i) === SIG.eocd && tail.readUInt16LE(i + 20) === tail.length - i - EOCD_BYTES) {
      at = i;
      break;
    }
  }
  if (at < 0) throw new ZipFormatError('File is not a zip file (no end of central directory record)');
  if (tail.readUInt16LE(at + 4) !== 0 || tail.readUInt16LE(at + 6) !== 0) throw new ZipFormatError('multi-disk archives are not supported');
  let entries = tail.readUInt16LE(at + 10);
  let centralSize = tail.readUInt32LE(at + 12);
  let centralOffset = tail.readUInt32LE(at + 16);
  let endOffset = tailStart + at;
  if (entries === U16_MAX || centralSize === U32_MAX || centralOffset === U32_MAX) {
    const locatorAt = tailStart + at - ZIP64_LOCATOR_BYTES;
    if (locatorAt < 0) throw new ZipFormatError('ZIP64 end of central directory locator missing');
    const locator = await readAt(locatorAt, ZIP64_LOCATOR_BYTES);
    if (locator.readUInt32LE(0) !== SIG.zip64Locator) throw new ZipFormatError('ZIP64 end of central directory locator missing');
    const recordAt = safeNumber(locator.readBigUInt64LE(8), 'ZIP64 end record offset');
    if (recordAt + ZIP64_EOCD_BYTES > locatorAt) throw new ZipFormatError('ZIP64 end of central directory record out of place');
    const record = await readAt(recordAt, ZIP64_EOCD_BYTES);
    if (record.readUInt32LE(0) !== SIG.zip64Eocd) throw new ZipFormatError('ZIP64 end of central directory record missing');
    entries = safeNumber(record.readBigUInt64LE(32), 'entry count');
    centralSize = safeNumber(record.readBigUInt64LE(40), 'central directory size');
    centralOffset = safeNumber(record.readBigUInt64LE(48), 'central directory offset');
    endOffset = recordAt;
  }
  if (centralOffset + centralSize > endOffset) throw new ZipFormatError('central directory out of place');
  return { entries, centralOffset, centralSize, endOffset };
}

/** One central directory entry as read from disk. */
export interface CentralEntry {
  name: string;
  flags: number;
  method: number;
  crc32: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

/** Parse `count` central directory entries from `directory`. */
export function parseCentralDirectory(directory: Buffer, count: number): CentralEntry[] {
  const entries: CentralEntry[] = [];
  let at = 0;
  const decoder = new TextDecoder('utf-8');
  for (let index = 0; index < count; index += 1) {
    if (at + CENTRAL_HEADER_BYTES > directory.length || directory.readUInt32LE(at) !== SIG.central) {
      throw new ZipFormatError(`central directory entry ${index} is malformed`);
    }
    const nameLength = directory.readUInt16LE(at + 28);
    const extraLength = directory.readUInt16LE(at + 30);
    const commentLength = directory.readUInt16LE(at + 32);
    const end = at + CENTRAL_HEADER_BYTES + nameLength + extraLength + commentLength;
    if (end > directory.length) throw new ZipFormatError(`central directory entry ${index} is truncated`);
    const entry: CentralEntry = {
      name: decoder.decode(directory.subarray(at + CENTRAL_HEADER_BYTES, at + CENTRAL_HEADER_BYTES + nameLength)),
      flags: directory.readUInt16LE(at + 8),
      method: directory.readUInt16LE(at + 10),
      crc32: directory.readUInt32LE(at + 16),
      compressedSize: directory.readUInt32LE(at + 20),
      uncompressedSize: directory.readUInt32LE(at + 24),
      localHeaderOffset: directory.readUInt32LE(at + 42),
    };
    applyZip64Extra(entry, directory.subarray(at + CENTRAL_HEADER_BYTES + nameLength, at + CENTRAL_HEADER_BYTES + nameLength + extraLength));
    entries.push(entry);
    at = end;
  }
  return entries;
}

// The ZIP64 extra field holds, in this order, only the values whose 32-bit field is 0xffffffff.
function applyZip64Extra(entry: CentralEntry, extra: Buffer): void {
  for (let at = 0; at + 4 <= extra.length; ) {
    const id = extra.readUInt16LE(at);
    const size = extra.readUInt16LE(at + 2);
    const body = extra.subarray(at + 4, at + 4 + size);
    at += 4 + size;
    if (id !== ZIP64_EXTRA_ID) continue;
    let field = 0;
    const next = (what: string): number => {
      if (field + 8 > body.length) throw new ZipFormatError(`ZIP64 extra field of ${entry.name} is too short`);
      const value = safeNumber(body.readBigUInt64LE(field), what);
      field += 8;
      return value;
    };
    if (entry.uncompressedSize === U32_MAX) entry.uncompressedSize = next('uncompressed size');
    if (entry.compressedSize === U32_MAX) entry.compressedSize = next('compressed size');
    if (entry.localHeaderOffset === U32_MAX) entry.localHeaderOffset = next('local header offset');
    return;
  }
}

/** Where a member's data starts, from its local header (whose name and extra lengths may differ from the central ones). */
export function dataOffset(localHeaderBytes: Buffer, entry: CentralEntry): number {
  if (localHeaderBytes.length < LOCAL_HEADER_BYTES || localHeaderBytes.readUInt32LE(0) !== SIG.local) {
    throw new ZipFormatError(`bad local file header for ${entry.name}`);
  }
  return entry.localHeaderOffset + LOCAL_HEADER_BYTES + localHeaderBytes.readUInt16LE(26) + localHeaderBytes.readUInt16LE(28);
}
