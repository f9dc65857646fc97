// A hub pull's own failure: its codes (EVERIFY, ENOSPC, EUSAGE, ...) are the ones the CLI, the dashboard and the
// `pull-model` command report. A refusal by the downloader (lib/download) arrives here as a verification failure
// that names the file; it is never an OTA rejection, which belongs to signed update jobs.

import { MnnEdgeError } from '../../lib/errors.js';

export class HubPullError extends MnnEdgeError {
  constructor(code: string, message: string, details?: Record<string, unknown>) {
    super(code, message, details);
    this.name = 'HubPullError';
  }
}
