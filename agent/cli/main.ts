import { asMnnEdgeError } from '../../lib/errors.js';
import { escapeControl } from '../../lib/sanitize.js';
import { commandEntries } from './commands/index.js';
import { UsageError } from './common/args.js';
import type { CliIo } from './common/command.js';

export async function main(argv: string[], io: CliIo): Promise<number> {
  const commands = commandEntries;
  const [name, ...rest] = argv;
  if (name === 'help' && rest[0] !== undefined && rest[0] !== '--help') return main([rest[0], '--help'], io);
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    const width = Math.max(...commands.map((c) => c.name.length));
    io.stdout.write(
      'Usage: mnn-edge <command> [options]\n' +
        '       mnn-edge --help | --version\n\nCommands:\n' +
        commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n') +
        "\n\nRun 'mnn-edge <command> --help' for the options of one command.\n",
    );
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-v' || name === '-V') {
    const { agentVersion } = await import('./commands/version.js');
    io.stdout.write(`${agentVersion()}\n`);
    return 0;
  }
  const entry = commands.find((c) => c.name === name);
  if (!entry) {
    io.stderr.write(`mnn-edge: unknown command '${name}'. Run 'mnn-edge --help' for the list.\n`);
    return 2;
  }
  const command = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`Usage: ${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`mnn-edge ${name}: ${err.message}\nUsage: ${command.usage}\n`);
      return 2;
    }
    // One line, control characters escaped (messages quote documents and servers); a stack only on request.
    const e = asMnnEdgeError(err);
    io.stderr.write(`mnn-edge ${name}: ${escapeControl(e.message, true)}\n`);
    if (io.env['MNN_EDGE_DEBUG'] && err instanceof Error && err.stack) io.stderr.write(`${err.stack}\n`);
    return e.exitCode;
  }
}
