// Imported first by the daemon's entry, so the timer census (agent/telemetry/timer-census.ts) sees the timers
// of everything the daemon loads after it, when the soak benchmark asks for it.
import { startTimerCensus, TIMER_CENSUS_ENV } from '../telemetry/timer-census.js';

if (process.env[TIMER_CENSUS_ENV] === '1') startTimerCensus();
