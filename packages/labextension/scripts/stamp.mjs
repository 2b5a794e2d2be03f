// After a build: copy install.json beside the built extension and record a hash of the
// sources it was built from (tests/jupyter/test_labextension.py checks the hash, so a
// committed prebuilt copy can never silently lag behind src/).
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = '../../letitloop/jupyter/labextension';
const files = [
  'package.json',
  'tsconfig.json',
  ...readdirSync('src').map(f => `src/${f}`),
  ...readdirSync('style').map(f => `style/${f}`)
].sort();
const hash = createHash('sha256');
for (const f of files) {
  hash.update(f + '\0');
  hash.update(readFileSync(f));
  hash.update('\0');
}
copyFileSync('install.json', join(out, 'install.json'));
writeFileSync(
  join(out, 'sources.json'),
  JSON.stringify({ sha256: hash.digest('hex'), files }, null, 2) + '\n'
);
