import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
/**
 * Where `command` would be run from, found the way a shell finds it (a name with a slash is taken as a path,
 * anything else is looked up in PATH), or undefined when there is no executable file. Looking costs a few
 * stats, so callers may ask each time instead of remembering an answer that installing a package would change.
 */
export function findExecutable(command, env = process.env) {
    const candidates = command.includes('/')
        ? [command]
        : (env['PATH'] ?? '')
            .split(delimiter)
            .filter((dir) => isAbsolute(dir))
            .map((dir) => join(dir, command));
    return candidates.find(isExecutableFile);
}
function isExecutableFile(path) {
    try {
        if (!statSync(path).isFile())
            return false;
        accessSync(path, constants.X_OK);
        return true;
    }
    catch {
        return false;
    }
}
//# sourceMappingURL=executable.js.map