import type { OtaJobView } from '../../../agent/dashboard-api/wire.js';
import { card, formatBytes, h, notice, pill, table } from '../ui/dom.js';
import type { Page } from '../ui/page.js';

// OTA jobs with their states, refreshed while the page is open (a job moves through several in a minute).

const STATE_KIND: Record<string, 'ok' | 'warn' | 'bad' | 'muted'> = {
  succeeded: 'ok',
  failed: 'bad',
  'rolled-back': 'warn',
  rejected: 'bad',
};

export const otaPage: Page = async (ctx) => {
  const body = h('div', {});
  const load = async () => {
    const { jobs } = await ctx.api.get<{ jobs: OtaJobView[] }>('/api/ota/jobs?limit=50');
    body.replaceChildren(
      jobs.length === 0
        ? notice(
            'info',
            'No OTA jobs yet',
            'Jobs appear here when the fleet sends one. From an operator machine with the signing key: ' +
              '`mnn-edge ota publish --targets targets.json --package <id>@<version> --device <device id> --broker <url> --serve <dir>` ' +
              '(docs/OTA.md). To install a package on this device by hand: `mnn-edge models pull <url>`.',
            'ota-empty',
          )
        : table(
            ['Job', 'Kind', 'Target', 'State', 'Progress', 'Reason', 'Updated'],
            jobs.map((j) => [
              j.jobId,
              j.kind,
              j.target,
              pill(j.state, STATE_KIND[j.state] ?? 'muted'),
              j.progress
                ? `${formatBytes(j.progress.doneBytes)} / ${formatBytes(j.progress.totalBytes)}`
                : '',
              j.reason ?? '',
              j.updatedAt,
            ]),
          ),
    );
  };
  await load();
  const timer = setInterval(() => {
    load().catch((err: unknown) =>
      body.replaceChildren(notice('error', 'OTA jobs unavailable', String((err as Error).message ?? err))),
    );
  }, 3000);
  return {
    element: h('div', { class: 'page' }, h('h1', {}, 'OTA'), card('Jobs', body)),
    dispose: () => clearInterval(timer),
  };
};
