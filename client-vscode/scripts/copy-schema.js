// Copies rules/ds_config.schema.json (the project's JSON Schema of DeepSpeed's config) into the
// extension, where contributes.jsonValidation points. Missing schema: a warning, not a failure.
'use strict';
const fs = require('fs');
const path = require('path');
const root = path.resolve(__dirname, '..', '..');
const src = path.join(root, 'rules', 'ds_config.schema.json');
const dst = path.join(root, 'client-vscode', 'schemas', 'ds_config.schema.json');
fs.mkdirSync(path.dirname(dst), { recursive: true });
if (!fs.existsSync(src)) {
  console.warn(`copy-schema: ${path.relative(root, src)} does not exist yet: ds_config.json gets no schema validation`);
  process.exit(process.env.DDX_REQUIRE_SCHEMA ? 1 : 0);
}
const text = fs.readFileSync(src, 'utf8');
JSON.parse(text); // a broken schema must not ship
fs.writeFileSync(dst, text);
console.log(`copy-schema: ${path.relative(root, src)} -> ${path.relative(root, dst)}`);
