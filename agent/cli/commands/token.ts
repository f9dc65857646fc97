import { ensurePairingToken, rotatePairingToken } from '../../http/pairing-token.js';
import { parseArgs, UsageError } from '../common/args.js';
import type { Command } from '../common/command.js';
import { configFromFlags } from './config.js';

export const command: Command = {
  name: 'token',
  summary: 'print the pairing token for the dashboard login and API clients',
  usage: 'mnn-edge token [--config FILE] [--data-dir DIR] [--rotate]',
  async run(argv, io) {
    const args = parseArgs(argv, { values: ['config', 'data-dir'], booleans: ['rotate'] });
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    const { config } = configFromFlags(args, io.env);
    if (args.flags['rotate']) {
      const { token, path } = rotatePairingToken(config.dataDir);
      io.stderr.write(
        `wrote a new pairing token to ${path}; every browser login is now invalid. Restart the agent (systemctl restart mnn-edge) for it to take effect.\n`,
      );
      io.stdout.write(`${token}\n`);
      return 0;
    }
    // Created here too, so a device can be paired before the agent's first start; the agent reads the same file.
    const { token, created, path } = ensurePairingToken(config.dataDir);
    if (created) io.stderr.write(`created a new pairing token in ${path}\n`);
    io.stdout.write(`${token}\n`);
    return 0;
  },
};
