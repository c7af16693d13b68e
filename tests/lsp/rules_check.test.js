// ddx rules check's warnings come from the engine (ddx_catalog_check): the
// CLI prints them and the language server shows the same words as
// diagnostics on a team's rule files (ddx.rules.extraPaths), placed on the
// string they are about; once the file is fixed they are cleared.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { DDX, ROOT, Session, uri, tmpdir } = require('./lib');

// A team rule made from a built-in one, with what rules check warns about:
// a literal too short to be selective, no encyclopedia fields, a related
// id that is no class.
function teamRule() {
  const rule = JSON.parse(fs.readFileSync(path.join(ROOT, 'rules/host/proc.segfault.json'), 'utf8'));
  rule.id = 'team.widget-broke';
  rule.title = 'The widget broke';
  rule.framework = 'train';
  rule.signatures = [{ id: 'widget', regex: '(?:WIDGET_BROKE|wb!) code=(?<code>\\d+)', literals: ['WIDGET_BROKE', 'wb!'], confidence: 0.9 }];
  rule.context = [];
  rule.explains = [];
  rule.related = ['team.no-such-class'];
  rule.samples = { positive: [{ text: 'WIDGET_BROKE code=7', source: 'test', facts: { code: '7' } }], negative: [] };
  for (const k of ['family', 'examples', 'confirm', 'scale', 'inference', 'compare', 'config_patches']) delete rule[k];
  return rule;
}

test('rules check: the CLI and the editor show the same warnings for a team rule file', async () => {
  const dir = tmpdir();
  const file = path.join(dir, 'team.widget-broke.json');
  fs.writeFileSync(file, JSON.stringify(teamRule(), null, 2));

  const cli = spawnSync(DDX, ['rules', 'check', dir], { encoding: 'utf8' });
  assert.equal(cli.status, 0, cli.stdout + cli.stderr);
  const prefix = `warning: ${file}: `;
  const cliWarnings = cli.stdout.split('\n').filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length));
  assert.equal(cliWarnings.length, 3, cli.stdout);
  assert.match(cli.stdout, /3 warnings, 0 failures/);

  const s = new Session();
  await s.initialize({ options: { settings: { ddx: { rules: { extraPaths: [dir] } } } } });
  await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { rules: { extraPaths: [dir] } } } });
  const u = uri(fs.realpathSync(file));
  const p = await s.diagnosticsFor(u);
  const got = p.diagnostics.map((d) => d.message);
  assert.deepStrictEqual([...got].sort(), [...cliWarnings].sort());
  assert.ok(p.diagnostics.every((d) => d.source === 'ddx rules check' && d.severity === 2));
  // each on the line of the string it names
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const on = (re) => p.diagnostics.find((d) => re.test(d.message)).range.start.line;
  assert.match(lines[on(/literal "wb!"/)], /"wb!"/);
  assert.match(lines[on(/team\.no-such-class/)], /"team\.no-such-class"/);
  assert.match(lines[on(/encyclopedia/)], /"id": "team\.widget-broke"/);
  // No built-in rule file gets rules-check diagnostics (make test checks them).
  assert.ok([...s.diagnostics.keys()].every((k) => !k.includes('/rules/') || k === u), [...s.diagnostics.keys()].join(' '));

  // The file fixed: the catalog reloads and the warnings are cleared.
  const fixed = teamRule();
  fixed.signatures[0].literals = ['WIDGET_BROKE'];
  fixed.signatures[0].regex = 'WIDGET_BROKE code=(?<code>\\d+)';
  fixed.related = [];
  const builtin = JSON.parse(fs.readFileSync(path.join(ROOT, 'rules/host/proc.segfault.json'), 'utf8'));
  for (const k of ['family', 'examples', 'confirm', 'scale', 'inference']) fixed[k] = builtin[k];
  fs.writeFileSync(file, JSON.stringify(fixed, null, 2));
  const cli2 = spawnSync(DDX, ['rules', 'check', dir], { encoding: 'utf8' });
  assert.match(cli2.stdout, /0 warnings, 0 failures/);
  const before = s.diagnostics.get(u).length;
  // (a second, empty folder: the setting changes, so the catalog reloads)
  await s.notify('workspace/didChangeConfiguration', { settings: { ddx: { rules: { extraPaths: [dir, tmpdir()] } } } });
  const p2 = await s.diagnosticsFor(u, { after: before });
  assert.deepStrictEqual(p2.diagnostics, []);
  assert.equal((await s.close()).code, 0);
});
