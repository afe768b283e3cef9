// The most configuration text tend reads: 1 MiB, the most a Kubernetes ConfigMap holds (the API
// server refuses a larger one), so that whatever deploys as a ConfigMap also loads as a file, and
// a file that is not a configuration (a log, a disk image, a 50 MB YAML) is refused before it is
// read whole or parsed: parsing that much YAML takes minutes and gigabytes. A configuration,
// with a section read from another system's file (fromFile), is a few kilobytes. The same bound
// holds for the configuration file, a ConfigMap's key and each fromFile.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export const CONFIG_MAX_BYTES = 1024 * 1024;

/** The refusal of text past CONFIG_MAX_BYTES; `bytes`: its size when known (a pipe's is not). */
export function tooLarge(bytes?: number): string {
  const size = bytes === undefined ? 'more than 1 MiB' : `${bytes} bytes`;
  return `is ${size}, past the most tend reads (1 MiB, ${CONFIG_MAX_BYTES} bytes, as a ConfigMap): is it the configuration file?`;
}

/** Why `text` is too large to be a configuration, or undefined. */
export function textSizeProblem(text: string): string | undefined {
  // Each UTF-16 unit is at least one byte: only a text near the bound needs its bytes counted.
  if (text.length * 3 <= CONFIG_MAX_BYTES) return undefined;
  const bytes = Buffer.byteLength(text, 'utf8');
  return bytes > CONFIG_MAX_BYTES ? tooLarge(bytes) : undefined;
}

/**
 * The text of the file at `path`, read only when it is at most CONFIG_MAX_BYTES: its size is
 * looked at first, and no more than the bound and one byte is read (a pipe or a file that grows
 * has no size to look at). `{ tooLarge }` says why it was not read; errors of the file system
 * (ENOENT, EISDIR, EACCES) are thrown as they are, for the caller to word.
 */
export function readConfigText(path: string): { text: string } | { tooLarge: string } {
  const fd = openSync(path, 'r');
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw Object.assign(new Error(`EISDIR: illegal operation on a directory, read '${path}'`), { code: 'EISDIR' });
    if (stat.isFile() && stat.size > CONFIG_MAX_BYTES) return { tooLarge: tooLarge(stat.size) };
    const buffer = Buffer.alloc(CONFIG_MAX_BYTES + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length > CONFIG_MAX_BYTES) return { tooLarge: tooLarge() };
    }
    return { text: buffer.toString('utf8', 0, length) };
  } finally {
    closeSync(fd);
  }
}
