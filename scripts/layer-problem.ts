/** One finding of scripts/check-layer.ts: the file and what is wrong with it. */
export interface Problem {
  file: string;
  message: string;
}
