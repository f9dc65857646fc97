import test from 'ava';
import { MASK, serverRows, serversChange, serversValue } from '../../dashboard/src/ui/mcp-servers.js';
import {
  buildPatch,
  type KeyRow,
  TOOLS_GROUP,
  TOOLS_PRESENT,
  visibleFields,
} from '../../dashboard/src/ui/settings-fields.js';

// The Settings page's tool sources without a browser: the voice.tools fields appear only where the agent has
// them, and the MCP server list is sent with its tokens write-only (`***` keeps the stored one).

const shown = [
  { name: 'home', url: 'http://ha.local:8123/api/mcp', token: MASK },
  { name: 'open', url: 'http://open.local/mcp', timeoutMs: 3000 },
];

test('the assistant tools group shows only on an agent that has voice.tools, and its fields patch as others do', (t) => {
  const without: KeyRow[] = [{ key: 'voice.maxNewTokens', value: 256, source: 'default', access: 'live' }];
  t.false(visibleFields(without).some((f) => f.group === TOOLS_GROUP));
  const withTools: KeyRow[] = [
    ...without,
    { key: TOOLS_PRESENT, value: 4, source: 'default', access: 'restart' },
    { key: 'voice.tools.builtins.announce', value: false, source: 'default', access: 'restart' },
    { key: 'voice.tools.limits.callTimeoutMs', value: 10000, source: 'default', access: 'restart' },
  ];
  const fields = visibleFields(withTools);
  t.deepEqual(
    fields.filter((f) => f.group === TOOLS_GROUP).map((f) => f.key),
    [
      'voice.tools.builtins.time',
      'voice.tools.builtins.timers',
      'voice.tools.builtins.camera',
      'voice.tools.builtins.announce',
      'voice.tools.limits.maxRounds',
      'voice.tools.limits.callTimeoutMs',
      'voice.tools.limits.turnBudgetMs',
      'voice.tools.limits.maxResultBytes',
    ],
  );
  const built = buildPatch(
    fields,
    withTools,
    new Map<string, string | boolean>([
      ['voice.tools.builtins.announce', true],
      ['voice.tools.limits.callTimeoutMs', '5000'],
      [TOOLS_PRESENT, '4'],
    ]),
  );
  t.deepEqual(built, {
    patch: { voice: { tools: { builtins: { announce: true }, limits: { callTimeoutMs: 5000 } } } },
    changed: ['voice.tools.builtins.announce', 'voice.tools.limits.callTimeoutMs'],
  });
});

test('servers as read: tokens never shown, only that one is stored; untouched rows are no change', (t) => {
  const rows = serverRows(shown);
  t.deepEqual(
    rows.map((r) => [r.name, r.token, r.stored]),
    [
      ['home', '', true],
      ['open', '', false],
    ],
  );
  t.deepEqual(serversChange(shown, rows), { changed: false });
  t.deepEqual(serverRows(undefined), []);
});

test('a typed token is sent, a left one is kept as ***, a cleared one is dropped, other keys go back as they were', (t) => {
  const rows = serverRows(shown);
  rows[1]!.token = 'new-secret';
  rows.push({ name: 'lab', url: 'https://lab.local/mcp', token: '', stored: false, rest: {} });
  t.deepEqual(serversChange(shown, rows), {
    changed: true,
    value: [
      { name: 'home', url: 'http://ha.local:8123/api/mcp', token: MASK },
      { timeoutMs: 3000, name: 'open', url: 'http://open.local/mcp', token: 'new-secret' },
      { name: 'lab', url: 'https://lab.local/mcp' },
    ],
  });
  const cleared = serverRows(shown);
  cleared[0]!.stored = false;
  t.deepEqual(serversValue(cleared), {
    value: [
      { name: 'home', url: 'http://ha.local:8123/api/mcp' },
      { timeoutMs: 3000, name: 'open', url: 'http://open.local/mcp' },
    ],
  });
});

test('bad rows are refused here, each naming its entry: no name, a name twice, no http URL, a rename without its token', (t) => {
  const rows = serverRows(shown);
  rows[0]!.name = 'house';
  rows[1]!.url = 'ftp://x';
  rows.push({ name: 'open', url: '', token: '', stored: false, rest: {} });
  rows.push({ name: ' ', url: 'http://x/mcp', token: '', stored: false, rest: {} });
  const got = serversValue(rows);
  t.true('errors' in got);
  t.deepEqual((got as { errors: string[] }).errors, [
    'voice.tools.mcp[0] (house): renamed from "home", so its stored token stays behind; enter the token again',
    'voice.tools.mcp[1] (open): the URL must be an http:// or https:// address, got "ftp://x"',
    'voice.tools.mcp[2] (open): the name "open" is used twice',
    'voice.tools.mcp[2] (open): the URL must be an http:// or https:// address, got ""',
    'voice.tools.mcp[3]: a server needs a name',
  ]);
  rows[0]!.token = 'retyped';
  t.false((serversValue(rows) as { errors: string[] }).errors.some((e) => e.includes('renamed')));
});
