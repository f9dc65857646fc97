import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

// A power cut must leave either the old or the new file, never a torn one: write a sibling .tmp,
// fsync it, rename over the target, then fsync the directory so the rename itself is durable.

export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some filesystems (and Windows) refuse fsync on directories; the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export function fsyncFile(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function writeFileDurable(path: string, data: string | Uint8Array, mode = 0o644): void {
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    const fd = openSync(tmp, 'w', mode);
    try {
      writeFileSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDir(dirname(path));
}

export function renameDurable(from: string, to: string): void {
  renameSync(from, to);
  fsyncDir(dirname(to));
  if (dirname(from) !== dirname(to)) fsyncDir(dirname(from));
}
