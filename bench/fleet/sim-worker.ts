// One simulator process of a fleet spread over several (bench/fleet with FLEET_PROCS > 1): a process holds
// about four descriptors per board (its MQTT socket, its SQLite file with -wal and -shm), so the container's
// `ulimit -n` of 20,000 caps one process near 5,000 boards. Started by sim-procs.ts with fork(); reports its
// boards online and its RSS every 500 ms, stops its boards on 'stop'.
import { startSimFleet } from './sim-fleet.js';

interface WorkerArgs {
  count: number;
  prefix: string;
  urls: string[];
  protocolVersion: 4 | 5;
  dir: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const fleet = await startSimFleet({
  count: args.count,
  prefix: args.prefix,
  dir: args.dir,
  urls: args.urls,
  protocolVersion: args.protocolVersion,
  ota: { trustedKeys: [] },
  telemetryIntervalMs: 30_000,
  reconnect: { minMs: 500, maxMs: 10_000 },
  batch: 100,
});
const report = setInterval(
  () => process.send?.({ online: fleet.online(), rss: process.memoryUsage().rss }),
  500,
);
process.on('message', (m) => {
  if (m !== 'stop') return;
  clearInterval(report);
  void fleet.stop().finally(() => process.exit(0));
});
