export interface Migration {
  /** Unique, ordered. Ranges by owner: 1–9 core, 10–19 models, 20–29 plan/runtime, 30–39 fleet/telemetry,
   *  40–49 ota, 50–59 workloads. Gaps are fine: every migration not yet applied runs, in order. */
  version: number;
  name: string;
  up: string;
}
