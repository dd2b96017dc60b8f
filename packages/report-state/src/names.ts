/**
 * File names as Python shows them. A name that is not valid UTF-8 cannot be a JS string
 * without losing bytes, so it is decoded the way Python's `surrogateescape` does (each
 * undecodable byte b becomes the lone surrogate U+DC00+b). JSON then carries the same
 * `\udcXX` escapes the original printed, and the raw bytes stay with the path for file
 * system calls.
 */

import { isUtf8 as bufferIsUtf8 } from 'node:buffer';

/** A path as the file system needs it: a string, or raw bytes when the name is not UTF-8. */
export type FsPath = string | Buffer;

/** A path as reported (`display`) and as passed to file system calls (`fs`). */
export interface ObservedPath {
  display: string;
  fs: FsPath;
}

function sequenceLength(bytes: Uint8Array, at: number): number {
  const lead = bytes[at]!;
  const cont = (i: number, lo = 0x80, hi = 0xbf): boolean => {
    const b = bytes[at + i];
    return b !== undefined && b >= lo && b <= hi;
  };
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return cont(1) ? 2 : 0;
  if (lead === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if (lead === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (lead >= 0xe1 && lead <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (lead === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (lead >= 0xf1 && lead <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (lead === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/** Decode UTF-8 like Python's `bytes.decode('utf-8', 'surrogateescape')`. */
export function decodeSurrogateEscape(bytes: Uint8Array): string {
  if (isUtf8(bytes)) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  let out = '';
  let at = 0;
  while (at < bytes.length) {
    const length = sequenceLength(bytes, at);
    if (length === 0) {
      out += String.fromCharCode(0xdc00 + bytes[at]!);
      at += 1;
    } else {
      out += Buffer.from(bytes.subarray(at, at + length)).toString('utf8');
      at += length;
    }
  }
  return out;
}

/**
 * The bytes a `decodeSurrogateEscape` text came from, as Python's `str.encode('utf-8',
 * 'surrogateescape')` (os.fsencode) gives them: each escape U+DC80..U+DCFF is its byte again,
 * everything else UTF-8.
 */
export function encodeSurrogateEscape(text: string): Buffer {
  if (!SURROGATE.test(text)) return Buffer.from(text, 'utf8');
  const bytes: number[] = [];
  // for...of yields a surrogate pair as one code point and a lone surrogate as itself.
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code >= 0xdc80 && code <= 0xdcff) bytes.push(code - 0xdc00);
    else for (const byte of Buffer.from(char, 'utf8')) bytes.push(byte);
  }
  return Buffer.from(bytes);
}

/** Whether the bytes are valid UTF-8, so a plain string names the same file. */
export function isUtf8(bytes: Uint8Array): boolean {
  return bufferIsUtf8(bytes);
}

// A name with no surrogate at all names the same file as a plain string (the escapes of
// undecodable bytes are lone surrogates), and sorts the same by UTF-16 unit and by code point.
const SURROGATE = /[\ud800-\udfff]/;

export function hasSurrogate(text: string): boolean {
  return SURROGATE.test(text);
}

/** What a child's display path starts with: `dir/` (`/` for the root itself). */
export function childPrefix(dir: ObservedPath): string {
  return `${dir.display === '/' ? '' : dir.display}/`;
}

/**
 * `childPath` for a listed entry whose name is already decoded (`decodeSurrogateEscape(raw)`),
 * so a sweep decodes each name once. `prefix` is `childPrefix(dir)`, which a sweep makes once per
 * root: each unit's path is then the prefix and its name, not a `dir` + `/` of its own (one
 * string fewer per unit, kept until the output is written).
 */
export function entryPath(dir: ObservedPath, raw: Buffer | string, decoded: string, prefix: string = childPrefix(dir)): ObservedPath {
  if (typeof dir.fs === 'string' && !SURROGATE.test(decoded)) {
    const display = prefix + decoded;
    return { display, fs: display };
  }
  return childPath(dir, raw);
}

/** `dir/name` for a directory and a raw entry name, keeping raw bytes only where needed. */
export function childPath(dir: ObservedPath, name: Buffer | string): ObservedPath {
  // The usual case, a UTF-8 path and a plain name: no bytes to keep, no conversion to make.
  if (typeof name === 'string' && typeof dir.fs === 'string' && !SURROGATE.test(name)) {
    const display = childPrefix(dir) + name;
    return { display, fs: display };
  }
  // A text name holding escapes (a path an entry named in bytes that are not UTF-8) is its bytes again.
  const nameBytes = typeof name === 'string' ? encodeSurrogateEscape(name) : name;
  const display = childPrefix(dir) + decodeSurrogateEscape(nameBytes);
  if (typeof dir.fs === 'string' && isUtf8(nameBytes)) return { display, fs: display };
  const base = typeof dir.fs === 'string' ? Buffer.from(dir.fs, 'utf8') : dir.fs;
  const slash = base.length > 0 && base[base.length - 1] === 0x2f ? Buffer.alloc(0) : Buffer.from('/');
  return { display, fs: Buffer.concat([base, slash, nameBytes]) };
}

/** Python's `str[:n]` and `len(str)`: code points, not UTF-16 units. */
export function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

export function codePointSlice(text: string, count: number): string {
  let out = '';
  let n = 0;
  for (const ch of text) {
    if (n === count) break;
    out += ch;
    n += 1;
  }
  return out;
}
