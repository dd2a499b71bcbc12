// unicodeskew.mjs writes datasets/tokenizer/unicodeskew.go: the code points
// that Go's Unicode tables (and Node's, the same version) put in P*, M*, N*
// or Cf but that Hugging Face's normalizers and pre-tokenizers, built on
// older tables, treat as unassigned. It asks the real tokenizer (npm
// tokenizers@0.23.2) how it handles "a" + c + "b" for each candidate:
//
//   node datasets/tokenizer/testdata/gen/unicodeskew.mjs [ORACLE_DIR] [TOKENIZERS_DIR]
//   gofmt -w datasets/tokenizer/unicodeskew.go
import { createRequire } from 'node:module';
import { writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const oracleDir = process.argv[2] || '/tmp/tokoracle';
const tokDir = process.argv[3] || join(here, '..', '..', '..', '..', 'testdata', 'tokenizers');
const require = createRequire(join(oracleDir, 'package.json'));
const { Tokenizer } = require('tokenizers');
const version = JSON.parse(require('node:fs').readFileSync(require.resolve('tokenizers/package.json'), 'utf8')).version;

// bert-base-uncased: lowercases, strips Mn after NFD, drops Cc/Cf/Co/Cs and
// isolates punctuation, so each class shows in the ids of "a" + c + "b".
const tok = Tokenizer.fromFile(join(tokDir, 'bert.json'));
const ids = async (s) => Array.from((await tok.encode(s, null, { addSpecialTokens: false })).getIds());
const [a] = await ids('a');
const [b] = await ids('b');
const joined = await ids('ab');
const same = (x, y) => x.length === y.length && x.every((v, i) => v === y[i]);

// bert.json re-plumbed to show two more classes: StripAccents (every mark)
// and Digits (every number), each on whitespace-split text.
function variant(normalizer, preTokenizer) {
  const json = JSON.parse(readFileSync(join(tokDir, 'bert.json'), 'utf8'));
  json.normalizer = normalizer;
  json.pre_tokenizer = preTokenizer;
  const path = join(tmpdir(), `stampede-unicodeskew-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(json));
  return Tokenizer.fromFile(path);
}
const marks = variant({ type: 'StripAccents' }, { type: 'WhitespaceSplit' });
const digits = variant(null, { type: 'Digits', individual_digits: true });
const idsWith = async (t, s) => Array.from((await t.encode(s, null, { addSpecialTokens: false })).getIds());

const skew = [];
for (let cp = 0x80; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  let ok = true;
  if (/\p{P}/u.test(c)) {
    const got = await ids('a' + c + 'b');
    ok = got.length === 3 && got[0] === a && got[2] === b;
  } else if (/\p{Mn}/u.test(c) && c.normalize('NFD') === c) {
    ok = same(await ids('a' + c + 'b'), joined);
  } else if (/\p{Cf}/u.test(c)) {
    ok = same(await ids('a' + c + 'b'), joined);
  } else if (/\p{M}/u.test(c)) {
    ok = same(await idsWith(marks, 'a' + c + 'b'), joined);
  } else if (/\p{N}/u.test(c)) {
    ok = (await idsWith(digits, 'a' + c + 'b')).length === 3;
  } else {
    continue;
  }
  if (!ok) skew.push(cp);
}

// Normalization: the code points Node's tables (newer than Go's) decompose,
// compose or give a nonzero combining class but Hugging Face's NFD, NFKD
// and NFKC leave alone and never reorder: for those normalizers they are
// unassigned starters. U+0345 has class 240, above every other mark, so a
// mark behind it moves in front under NFD.
const { nfdNormalizer, nfkdNormalizer, nfkcNormalizer } = require('tokenizers');
const [hfNFD, hfNFKD, hfNFKC] = [nfdNormalizer(), nfkdNormalizer(), nfkcNormalizer()];
const normSkew = [];
for (let cp = 0x80; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  const probe = '\u0345' + c;
  const nontrivial = c.normalize('NFKD') !== c || c.normalize('NFKC') !== c || probe.normalize('NFD') !== probe;
  if (!nontrivial) continue;
  if (hfNFKD.normalizeString(c) === c && hfNFKC.normalizeString(c) === c && hfNFD.normalizeString(probe) === probe) {
    normSkew.push(cp);
  }
}

// StripAccents drops what its own table calls a combining mark, which is
// neither Go's M nor BERT's Mn (U+1CF2 and U+1CF3 were marks once): the
// whole set, asked of the normalizer itself.
const { stripAccentsNormalizer } = require('tokenizers');
const hfStrip = stripAccentsNormalizer();
const stripped = [];
for (let cp = 0x80; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  if (hfStrip.normalizeString('a' + String.fromCodePoint(cp)) === 'a') stripped.push(cp);
}

// Whitespace splits on \w and \s as Hugging Face's regex defines them,
// whose tables are newer than Go's. Each code point c goes through a
// Whitespace pre-tokenizer between two "!": a word character makes three
// tokens ("!", c, "!"), a space two, anything else one unknown word.
// goclasses prints Go's side; the tables keep the differences both ways.
const { execFileSync } = await import('node:child_process');
const goClasses = JSON.parse(execFileSync('go', ['run', './datasets/tokenizer/testdata/gen/goclasses'], { cwd: join(here, '..', '..', '..', '..'), encoding: 'utf8' }));
const wsTok = (() => {
  const json = JSON.parse(readFileSync(join(tokDir, 'bert.json'), 'utf8'));
  // A vocabulary of "!" alone: every other character is unknown, so only
  // the split shows in the count.
  json.normalizer = null;
  json.post_processor = null;
  json.added_tokens = [];
  json.model.vocab = { '[UNK]': 0, '!': 1 };
  json.pre_tokenizer = { type: 'Whitespace' };
  const path = join(tmpdir(), `stampede-unicodeskew-ws-${process.pid}.json`);
  writeFileSync(path, JSON.stringify(json));
  return Tokenizer.fromFile(path);
})();
const hfWord = new Set(), hfSpace = new Set();
const all = [];
for (let cp = 0x80; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) all.push(cp);
for (let i = 0; i < all.length; i += 20000) {
  const batch = all.slice(i, i + 20000);
  const encs = await wsTok.encodeBatch(batch.map((cp) => '!' + String.fromCodePoint(cp) + '!'), { addSpecialTokens: false });
  encs.forEach((e, k) => {
    const n = e.getIds().length;
    if (n === 3) hfWord.add(batch[k]); else if (n === 2) hfSpace.add(batch[k]);
  });
}
function inGo(ranges, cp) {
  let lo = 0, hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid][1] < cp) lo = mid + 1; else if (ranges[mid][0] > cp) hi = mid - 1; else return true;
  }
  return false;
}
const classSkew = {};
for (const [name, hf] of [['word', hfWord], ['space', hfSpace]]) {
  classSkew[name] = { hfOnly: all.filter((cp) => hf.has(cp) && !inGo(goClasses[name], cp)), goOnly: all.filter((cp) => !hf.has(cp) && inGo(goClasses[name], cp)) };
}

// Split patterns go through Oniguruma, whose category tables are newer
// than Go's too. The candidates are the code points where Node's tables
// (newer still) and Go's disagree; each goes through a Split on \p{X}
// between two separators outside X: isolated, it makes three tokens.
const categories = ['L', 'Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'M', 'N', 'P', 'S'];
function splitTok(pattern) {
  const json = JSON.parse(readFileSync(join(tokDir, 'bert.json'), 'utf8'));
  json.normalizer = null;
  json.post_processor = null;
  json.added_tokens = [];
  json.model.vocab = { '[UNK]': 0, '!': 1, 'a': 2 };
  json.pre_tokenizer = { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false };
  const path = join(tmpdir(), `stampede-unicodeskew-split-${process.pid}.json`);
  writeFileSync(path, JSON.stringify(json));
  return Tokenizer.fromFile(path);
}
for (const cat of categories) {
  const js = new RegExp(`\\p{${cat === 'L' || cat === 'M' || cat === 'N' || cat === 'P' || cat === 'S' ? cat : 'gc=' + cat}}`, 'u');
  const cands = all.filter((cp) => js.test(String.fromCodePoint(cp)) !== inGo(goClasses[cat], cp));
  const sep = cat[0] === 'L' ? '!' : 'a';
  const t = splitTok(`\\p{${cat}}`);
  const hf = new Set();
  for (let i = 0; i < cands.length; i += 20000) {
    const batch = cands.slice(i, i + 20000);
    const encs = await t.encodeBatch(batch.map((cp) => sep + String.fromCodePoint(cp) + sep), { addSpecialTokens: false });
    encs.forEach((e, k) => { if (e.getIds().length === 3) hf.add(batch[k]); });
  }
  classSkew[cat] = { hfOnly: cands.filter((cp) => hf.has(cp) && !inGo(goClasses[cat], cp)), goOnly: cands.filter((cp) => !hf.has(cp) && inGo(goClasses[cat], cp)) };
}

// Collapse into ranges.
function collapse(cps) {
  const ranges = [];
  for (const cp of cps) {
    const last = ranges[ranges.length - 1];
    if (last && last[1] === cp - 1) last[1] = cp; else ranges.push([cp, cp]);
  }
  return ranges;
}
const ranges = collapse(skew);
const hex = (n) => '0x' + n.toString(16).toUpperCase().padStart(4, '0');
let out = `// Code generated by testdata/gen/unicodeskew.mjs from tokenizers@${version}; DO NOT EDIT.

package tokenizer

// olderUnicode lists, as inclusive ranges, the code points Go's tables put in
// P*, M*, N* or Cf that Hugging Face's normalizers and pre-tokenizers treat
// as unassigned (their tables predate them).
var olderUnicode = [][2]rune{
`;
for (const [lo, hi] of ranges) out += `\t{${hex(lo)}, ${hex(hi)}},\n`;
out += `}

// unnormalized lists, as inclusive ranges, the code points that Hugging
// Face's NFC, NFD, NFKC and NFKD treat as unassigned starters (no
// decomposition, no composition, combining class 0) although newer tables,
// Go's among them, give them one.
var unnormalized = [][2]rune{
`;
for (const [lo, hi] of collapse(normSkew)) out += `\t{${hex(lo)}, ${hex(hi)}},\n`;
out += `}

// The Whitespace pre-tokenizer's \\w and \\s as Hugging Face's regex
// tables have them, against Go's: code points only they put in the class
// (newerWord, newerSpace) and code points only Go does (olderWord,
// olderSpace).
`;
for (const [name, goName] of [['Word', 'word'], ['Space', 'space']]) {
  out += `var newer${name} = [][2]rune{\n`;
  for (const [lo, hi] of collapse(classSkew[goName].hfOnly)) out += `\t{${hex(lo)}, ${hex(hi)}},\n`;
  out += `}\n\nvar older${name} = [][2]rune{\n`;
  for (const [lo, hi] of collapse(classSkew[goName].goOnly)) out += `\t{${hex(lo)}, ${hex(hi)}},\n`;
  out += '}\n\n';
}
out += `// The general categories as Oniguruma's tables have them, against
// Go's, for the split patterns: code points only Oniguruma puts in the
// category, and code points only Go does.
var newerCategory = map[string][][2]rune{
`;
for (const cat of categories) {
  out += `\t"${cat}": {`;
  for (const [lo, hi] of collapse(classSkew[cat].hfOnly)) out += `{${hex(lo)}, ${hex(hi)}}, `;
  out += '},\n';
}
out += `}

var olderCategory = map[string][][2]rune{
`;
for (const cat of categories) {
  out += `\t"${cat}": {`;
  for (const [lo, hi] of collapse(classSkew[cat].goOnly)) out += `{${hex(lo)}, ${hex(hi)}}, `;
  out += '},\n';
}
out += `}

// strippedMarks lists, as inclusive ranges, the code points Hugging Face's
// StripAccents removes: its combining marks, as of its tables.
var strippedMarks = [][2]rune{
`;
for (const [lo, hi] of collapse(stripped)) out += `\t{${hex(lo)}, ${hex(hi)}},\n`;
out += '}\n';
writeFileSync(join(here, '..', '..', 'unicodeskew.go'), out);
console.error(`${skew.length} code points in ${ranges.length} ranges; ${normSkew.length} unnormalized; ${stripped.length} stripped marks; word +${classSkew.word.hfOnly.length}/-${classSkew.word.goOnly.length}, space +${classSkew.space.hfOnly.length}/-${classSkew.space.goOnly.length}; ${categories.map((c) => `${c} +${classSkew[c].hfOnly.length}/-${classSkew[c].goOnly.length}`).join(', ')}`);
