// The Hugging Face stand-in in its own process, for bench/pull: the hub must not share an event loop (or a CPU
// share) with the client under test, or the comparison with curl would be skewed against us. Started with
// fork(); the repository comes as a JSON file path in argv, the endpoint goes back over IPC, and the parent asks
// for byte counts and cut plans over the same channel.
import { readFileSync } from 'node:fs';
import { type StandinRepo, startHuggingFaceStandin } from '../../test/helpers/hub-standins.js';

type Request = { cmd: 'bytes' } | { cmd: 'cut'; plan: number[] } | { cmd: 'close' };

const repo = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as StandinRepo;
const hub = await startHuggingFaceStandin([repo], { pageSize: 50 });
process.send!({ endpoint: hub.endpoint });
process.on('message', async (m: Request) => {
  if (m.cmd === 'bytes') process.send!({ bytes: hub.log.bytes });
  else if (m.cmd === 'cut') {
    hub.cutAfter.splice(0, hub.cutAfter.length, ...m.plan);
    process.send!({ ok: true });
  } else {
    await hub.close();
    process.exit(0);
  }
});
