import type { Api } from './api.js';
import { notice } from './dom.js';

// The run-time settings file on disk was not used (damaged, or written by a newer agent): the agent runs on the
// defaults, the file and the last good revision from the change log, and never overwrites the damaged file
// silently. Shown on the Overview, Models and Settings pages, where a user would otherwise wonder why a change
// made earlier is gone.

export function settingsProblemNotice(problem: string): HTMLElement {
  return notice('error', 'Run-time settings not used', problem, 'settings-problem');
}

/** The notice when /api/config reports a problem; null otherwise (or when the settings cannot be read). */
export async function fetchSettingsProblem(api: Api): Promise<HTMLElement | null> {
  try {
    const view = await api.get<{ problem?: string }>('/api/config');
    return view.problem ? settingsProblemNotice(view.problem) : null;
  } catch {
    return null;
  }
}
