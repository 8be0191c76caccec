#!/usr/bin/env node
// A SoftHSM token with an AES-256 key-encrypting key, for tests and for trying the PKCS#11 key
// provider (docs/key-custody.md): writes <dir>/softhsm2.conf (tokens in <dir>/tokens), initializes a
// token and generates the key in it, sensitive and non-extractable. Point SOFTHSM2_CONF at the file.
//
//   node scripts/softhsm-token.mjs <dir> [--token-label tokenvault] [--pin 1234] [--key-label tokenvault-kek]
//        [--import-hex <64 hex digits>]   a known key value instead of a generated one (the memory scan test)
//        [--extractable]                  a key the token would export (refused by the provider; a test)
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'token-label': { type: 'string', default: 'tokenvault' },
    pin: { type: 'string', default: '1234' },
    'key-label': { type: 'string', default: 'tokenvault-kek' },
    'import-hex': { type: 'string' },
    extractable: { type: 'boolean', default: false },
    module: { type: 'string', default: SOFTHSM_MODULE },
  },
});
if (positionals.length !== 1) {
  console.error('usage: node scripts/softhsm-token.mjs <dir> [--token-label l] [--pin p] [--key-label l]');
  process.exit(2);
}
const dir = resolve(positionals[0]);
const conf = join(dir, 'softhsm2.conf');
mkdirSync(join(dir, 'tokens'), { recursive: true, mode: 0o700 });
writeFileSync(conf, `directories.tokendir = ${join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
const env = { ...process.env, SOFTHSM2_CONF: conf };
const soPin = `${values.pin}-so`;
execFileSync('softhsm2-util', ['--init-token', '--free', '--label', values['token-label'], '--pin', values.pin, '--so-pin', soPin], {
  env,
  stdio: ['ignore', 'ignore', 'inherit'],
});

// The module reads SOFTHSM2_CONF when it initializes, in this process.
process.env.SOFTHSM2_CONF = conf;
const require = createRequire(import.meta.url);
const p11 = require('pkcs11js');
const lib = new p11.PKCS11();
lib.load(values.module);
lib.C_Initialize();
try {
  const slot = lib.C_GetSlotList(true).find((s) => lib.C_GetTokenInfo(s).label.trim() === values['token-label']);
  const session = lib.C_OpenSession(slot, p11.CKF_SERIAL_SESSION | p11.CKF_RW_SESSION);
  lib.C_Login(session, p11.CKU_USER, values.pin);
  const template = [
    { type: p11.CKA_CLASS, value: p11.CKO_SECRET_KEY },
    { type: p11.CKA_KEY_TYPE, value: p11.CKK_AES },
    { type: p11.CKA_LABEL, value: values['key-label'] },
    { type: p11.CKA_TOKEN, value: true },
    { type: p11.CKA_PRIVATE, value: true },
    { type: p11.CKA_SENSITIVE, value: !values.extractable },
    { type: p11.CKA_EXTRACTABLE, value: values.extractable },
    { type: p11.CKA_ENCRYPT, value: true },
    { type: p11.CKA_DECRYPT, value: true },
  ];
  if (values['import-hex'] !== undefined) {
    lib.C_CreateObject(session, [...template, { type: p11.CKA_VALUE, value: Buffer.from(values['import-hex'], 'hex') }]);
  } else {
    lib.C_GenerateKey(session, { mechanism: p11.CKM_AES_KEY_GEN }, [...template, { type: p11.CKA_VALUE_LEN, value: 32 }]);
  }
  lib.C_Logout(session);
  lib.C_CloseSession(session);
} finally {
  lib.C_Finalize();
}
process.stdout.write(`${JSON.stringify({ conf, module: values.module, tokenLabel: values['token-label'], keyLabel: values['key-label'] })}\n`);
