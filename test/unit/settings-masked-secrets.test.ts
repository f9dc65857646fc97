import test from 'ava';
import { redactConfig, restoreMaskedSecrets, SECRET_MASK } from '../../agent/config/redact.js';

// A list saved whole from the Settings page (voice.tools.mcp: MCP servers, each with a token the page only sees
// masked) keeps the stored token of every entry whose token came back as the mask, matched by name; a mask that
// has nothing to keep is refused with its place named, never stored as the token.

const running = {
  voice: {
    tools: {
      maxRounds: 4,
      mcp: [
        { name: 'home', url: 'http://ha.local:8123/api/mcp', token: 'long-lived-ha' },
        { name: 'notes', url: 'http://notes.local/mcp', token: 'notes-secret' },
      ],
    },
  },
};

test('a masked token is the stored one of the entry with the same name, wherever it moved in the list', (t) => {
  const shown = redactConfig(running) as typeof running;
  t.is(shown.voice.tools.mcp[0]!.token, SECRET_MASK, 'what the page reads');
  const patch = {
    voice: {
      tools: {
        mcp: [
          { name: 'notes', url: 'http://notes.local/mcp', token: SECRET_MASK },
          { name: 'home', url: 'http://ha2.local:8123/api/mcp', token: SECRET_MASK },
          { name: 'lab', url: 'http://lab.local/mcp', token: 'typed-new' },
          { name: 'open', url: 'http://open.local/mcp' },
        ],
      },
    },
  };
  t.deepEqual(restoreMaskedSecrets(patch, running), {
    voice: {
      tools: {
        mcp: [
          { name: 'notes', url: 'http://notes.local/mcp', token: 'notes-secret' },
          { name: 'home', url: 'http://ha2.local:8123/api/mcp', token: 'long-lived-ha' },
          { name: 'lab', url: 'http://lab.local/mcp', token: 'typed-new' },
          { name: 'open', url: 'http://open.local/mcp' },
        ],
      },
    },
  });
  // A patch without masks passes as it is (null removes, scalars stay).
  const plain = { voice: { systemPrompt: 'Be brief.', tools: null } };
  t.deepEqual(restoreMaskedSecrets(plain, running), plain);
});

test('a mask with nothing stored to keep (a new or renamed server) is refused, naming the entry', (t) => {
  const err = t.throws(() =>
    restoreMaskedSecrets(
      { voice: { tools: { mcp: [{ name: 'renamed', url: 'http://x/mcp', token: SECRET_MASK }] } } },
      running,
    ),
  );
  t.regex(err!.message, /^voice\.tools\.mcp\[0\]\.token: .*none to keep/);
});
