// Encodes a corpus file with gpt-tokenizer (the reference JavaScript tokenizer) for bench/tok_bench.sh:
// node tok_gpt_tokenizer.js PACKAGE_DIR ENCODING CORPUS OUT_IDS
// Writes the ids space-separated on one line (the format of `sextant tokenize encode`) and prints
// "bytes tokens seconds" for the encode call alone (single-threaded; special-token strings are encoded as plain text).
const fs = require('fs');
const path = require('path');
const [pkg, encoding, corpus, out] = process.argv.slice(2);
const tok = require(path.resolve(pkg, 'cjs/encoding', encoding + '.js'));
const text = fs.readFileSync(corpus, 'utf8');
const t0 = process.hrtime.bigint();
const ids = tok.encode(text, { disallowedSpecial: new Set() });
const dt = Number(process.hrtime.bigint() - t0) / 1e9;
fs.writeFileSync(out, ids.join(' ') + '\n');
console.log(Buffer.byteLength(text, 'utf8'), ids.length, dt.toFixed(3));
