import type { FullDiskResult } from '../../scripts/system-image/powercut-fulldisk.js';

/** The full-disk case as a run that met every target records it: 507, nothing lost, integrity ok. */
export const passingFullDisk: FullDiskResult = {
  status: 507,
  body: 'insufficient_storage',
  clear: true,
  nothingLost: true,
  servedWhileFull: true,
  recovered: true,
  integrity: 'ok',
  integrityOk: true,
  details: [],
};
