// Regenerates tests/data/pretok_js_cases.txt: random strings over a pool of tricky characters (letters of
// every case category, combining marks, digits of several scripts, all kinds of whitespace, apostrophes,
// contractions, punctuation, emoji, zero-width characters) split by JavaScript's RegExp with gpt-tokenizer
// 4.0.0's patterns (r50k/p50k, cl100k, o200k). Line format: hex(utf8)<TAB>r50k<TAB>cl100k<TAB>o200k, each a
// comma-separated list of piece byte lengths. Usage: node tests/data/gen_pretok_cases.js > tests/data/pretok_js_cases.txt
const C = String.raw`'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE])`;
const res = [
  /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu,
  new RegExp(String.raw`${C}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+(?!\S)|\s`, 'gu'),
  new RegExp(String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:${C})?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:${C})?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`, 'gu'),
];
const pool = ['a', 'b', 'Z', 'Q', 'é', 'É', 'ǅ', 'ʰ', '中', '文', '\u0301', '\u0903', '1', '2', '٣', 'Ⅻ', '½', ' ', ' ',
  ' ', '\t', '\n', '\r', '\u00a0', '\u2028', '\u3000', '\ufeff', "'", "'", 's', 'S', 'l', 'L', 't', 'v', 'e', 'r', 'R',
  'd', 'm', '!', '.', '/', '-', '😀', '$', '\u200b', '\u0085', 'ß', 'ﬁ'];
let seed = 1;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const lines = [];
for (let i = 0; i < 1500; i++) {
  let s = '';
  for (let j = 0, L = 1 + rnd(40); j < L; j++) s += pool[rnd(pool.length)];
  const lens = res.map((re) => [...s.matchAll(re)].map((m) => Buffer.byteLength(m[0])).join(','));
  lines.push([Buffer.from(s, 'utf8').toString('hex'), ...lens].join('\t'));
}
process.stdout.write(lines.join('\n') + '\n');
