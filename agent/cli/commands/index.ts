import type { Command } from '../command.js';

// Every subcommand, listed once. Each lives in its own module under commands/.
export async function loadCommands(): Promise<Command[]> {
  const modules = await Promise.all([
    import('./version.js'),
    import('./run.js'),
    import('./token.js'),
    import('./config.js'),
    import('./models.js'),
    import('./detect.js'),
    import('./ota.js'),
    import('./fleet.js'),
    import('./bench.js'),
  ]);
  return modules.map((m) => m.command);
}
