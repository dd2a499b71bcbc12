// golden.mjs writes datasets/tokenizer/testdata/golden/<family>.json: texts
// and the ids Hugging Face's own tokenizer (npm tokenizers@0.23.2, the Rust
// library) gives them, plus decodes of random ids. The Go tests compare
// against these files; rerun this script to regenerate them:
//
//   npm install --prefix /tmp/tokoracle tokenizers@0.23.2
//   scripts/fetch-tokenizers.sh
//   node datasets/tokenizer/testdata/gen/golden.mjs [ORACLE_DIR] [TOKENIZERS_DIR]
//
// Everything is derived from a fixed seed, so a rerun with the same oracle
// reproduces the files byte for byte.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..', '..');
const oracleDir = process.argv[2] || '/tmp/tokoracle';
const tokDir = process.argv[3] || join(repo, 'testdata', 'tokenizers');
// GOLDEN_OUT and GOLDEN_SCALE write a larger corpus elsewhere for a deeper
// check (STAMPEDE_GOLDEN_DIR=that-dir go test -run TestGolden); the
// committed files use the defaults.
const outDir = process.env.GOLDEN_OUT || join(here, '..', 'golden');
const scale = Number(process.env.GOLDEN_SCALE || 1);
const require = createRequire(join(oracleDir, 'package.json'));
const { Tokenizer } = require('tokenizers');
const oracleVersion = JSON.parse(readFileSync(require.resolve('tokenizers/package.json'), 'utf8')).version;

// Families: golden name -> file, relative to testdata/tokenizers.
const families = {
  llama3: 'llama3.json',
  qwen3: 'qwen3.json',
  gpt4o: 'gpt4o.json',
  gptoss: 'gptoss.json',
  deepseek_v3: 'deepseek_v3.json',
  claude: 'claude.json',
  cohere: 'cohere.json',
  llama2: 'llama2.json',
  gemma3: 'gemma3.json',
  bert: 'bert.json',
  minilm: 'minilm.json',
  // Committed in the package's testdata (a path starting "testdata/" is
  // relative to datasets/tokenizer), so it is checked without the fetch.
  tiny: 'testdata/tiny/tokenizer.json',
  // A Unigram model SentencePiece trained (testdata/gen/unigram.sh), in
  // XLM-RoBERTa's layout with the nmt_nfkc Precompiled normalizer.
  unigram: 'testdata/unigram/tokenizer.json',
};

// mulberry32: a small seeded PRNG so the corpus is reproducible.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fixed = [
  ['empty', ''],
  ['prose', 'The quick brown fox jumps over the lazy dog. It wasn\'t the first time; she\'d said so before, and they\'ll say it again.'],
  ['prose-caps', 'I\'M SURE YOU\'RE RIGHT, BUT WE\'VE GOT TO GO. HE\'D KNOW. It\'S fine, isn\'T it? O\'Neil\'s car.'],
  ['prose-long', 'In 1969, Neil Armstrong became the first person to walk on the Moon. Millions watched on television as he descended the ladder of the lunar module Eagle and said: "That\'s one small step for [a] man, one giant leap for mankind." The mission, Apollo 11, had launched four days earlier from Kennedy Space Center in Florida.'],
  ['numbers', 'Call 555-0100 or +1 (800) 123-4567. Pi is 3.14159265358979; 1,000,000 > 999999; 0x7fff 1e-9 12345678901234567890.'],
  ['code-go', 'func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Printf("%d\\n", i*i)\n\t}\n}\n'],
  ['code-python', 'def fib(n: int) -> int:\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\nprint([fib(k) for k in range(20)])\n'],
  ['code-json', '{"model": "llama", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 128, "stream": true}'],
  ['html', '<div class="x"><a href="https://example.com/path?q=1&r=2#frag">link</a></div>\r\n<br/>'],
  ['whitespace', '  leading and trailing  \t\t tabs\n\n\n  newlines \r\n\r\n crlf      many spaces   \u00a0nbsp\u3000ideographic '],
  ['newline-runs', 'a\n  \nb\n \n \nc \n\n  d\t\n\t\n'],
  ['spaces-only', '          '],
  ['cjk-zh', '自然语言处理是人工智能的一个重要分支。我们今天去公园散步，天气很好！'],
  ['cjk-ja', '東京は日本の首都です。ひらがなとカタカナ、そして漢字を使います。'],
  ['cjk-ko', '안녕하세요, 세계! 한국어 텍스트를 토큰화합니다.'],
  ['mixed-scripts', 'Привет мир! Γειά σου κόσμε. مرحبا بالعالم. שלום עולם. नमस्ते दुनिया. สวัสดีชาวโลก'],
  ['emoji', 'Hi 👋🏽! Family: 👨‍👩‍👧‍👦, flags 🇫🇷🇯🇵, hearts ❤️💙, math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ✓'],
  ['accents', 'café naïve résumé Ångström façade — cafe\u0301 e\u0300 n\u0303 Ω ǅ ß ﬁ ﬂ ① ² Ｈｅｌｌｏ ｶﾀｶﾅ'],
  ['punctuation', '!!! ??? ... --- *** ___ ((( ))) [[[ ]]] {{{ }}} ;;; ::: ,,, \'\'\' """ ``` ~~~ @@@ ### $$$ %%% ^^^ &&& |||'],
  ['url-path', 'https://huggingface.co/meta-llama/Meta-Llama-3-8B/resolve/main/tokenizer.json /usr/local/bin ../a/b\\c'],
  ['control', 'tab\there\u0000nul\u0007bell\u001bescape\u200bzwsp\u200dzwj\ufeffbom\u00adshy'],
  ['long-word', 'a'.repeat(300) + ' ' + 'xyz'.repeat(80) + ' ' + '1234567890'.repeat(10)],
  ['long-spaces', ' '.repeat(200) + 'x' + '\n'.repeat(50) + 'y' + '\t '.repeat(40)],
  // The added_flags variant's tokens: lstrip, rstrip, single_word, normalized.
  ['flags-strip', 'call  <tool>  {"x": 1}</tool>   done <tool>\n</tool>\tend'],
  ['flags-word', 'token tokens mytoken token. (token) _token token_ 1token token'],
  ['flags-both', 'a <both> b<both>c  <both>  '],
  ['leading-space', ' Leading space, then text'],
  ['digits-dash', 'v1.2.3-rc4 2024-01-31 well-known co-op'],
];

function randomCodePoints(r, n) {
  const ranges = [
    [0x20, 0x7e, 8], [0x09, 0x0d, 1], [0xa0, 0x24f, 2], [0x370, 0x52f, 1], [0x590, 0x6ff, 1],
    [0x900, 0xdff, 1], [0x1100, 0x11ff, 1], [0x2000, 0x206f, 1], [0x2190, 0x2bff, 1],
    [0x3000, 0x30ff, 1], [0x4e00, 0x9fff, 2], [0xac00, 0xd7a3, 1], [0xf900, 0xfaff, 1],
    [0xfe00, 0xffef, 1], [0x1f300, 0x1faff, 2], [0x1d400, 0x1d7ff, 1], [0x20000, 0x2a6df, 1],
    [0x0300, 0x036f, 1], [0xe000, 0xf8ff, 1],
  ];
  const total = ranges.reduce((s, x) => s + x[2], 0);
  let s = '';
  for (let i = 0; i < n; i++) {
    let pick = r() * total;
    let range = ranges[0];
    for (const x of ranges) { if (pick < x[2]) { range = x; break; } pick -= x[2]; }
    s += String.fromCodePoint(range[0] + Math.floor(r() * (range[1] - range[0] + 1)));
  }
  return s;
}

// randomPlanes draws n code points from every Unicode plane, surrogates
// excluded: unassigned and private-use code points, controls (\r and \x0c
// among them), combining marks, the line and paragraph separators, and
// plain letters and spaces for them to sit between. Tables that disagree
// on a code point's category (newly assigned ones, above all) show here.
function randomPlanes(r, n) {
  const ranges = [
    [0x0000, 0x10ffff, 6], // anything at all
    [0x0000, 0xffff, 3], [0x10000, 0x3ffff, 2], [0xe0000, 0xe01ef, 1],
    [0xe000, 0xf8ff, 1], [0xf0000, 0x10ffff, 1], // private use
    [0x00, 0x1f, 2], [0x7f, 0x9f, 1], [0x0d, 0x0d, 1], [0x0c, 0x0c, 1],
    [0x0300, 0x036f, 2], [0x1ab0, 0x1aff, 1], [0x1dc0, 0x1dff, 1], [0x20d0, 0x20ff, 1], [0xfe20, 0xfe2f, 1],
    [0x0890, 0x08ff, 1], [0x2028, 0x2029, 1], [0x2e40, 0x2e7f, 1], [0xfff0, 0xffff, 1],
    [0x61, 0x7a, 4], [0x20, 0x20, 3], [0x30, 0x39, 1],
  ];
  const total = ranges.reduce((s, x) => s + x[2], 0);
  let s = '';
  while (s.length < n) {
    let pick = r() * total;
    let range = ranges[0];
    for (const x of ranges) { if (pick < x[2]) { range = x; break; } pick -= x[2]; }
    const cp = range[0] + Math.floor(r() * (range[1] - range[0] + 1));
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    s += String.fromCodePoint(cp);
  }
  return s;
}

function randomWords(r, n) {
  const words = ['the', 'The', ' ', '  ', '\n', '\t', 'model', 'token', 'ization', "'s", "'LL", '12', '345', '6789',
    '.', ',', '!?', 'naïve', '東京', '🚀', 'under_score', 'camelCase', 'HTTP', '\r\n', '—', '«', '»', '$', '€', '#'];
  let s = '';
  for (let i = 0; i < n; i++) s += words[Math.floor(r() * words.length)] + (r() < 0.5 ? ' ' : '');
  return s;
}

function addedTokenTexts(r, tok, json) {
  const added = (json.added_tokens || []).map((t) => t.content);
  if (added.length === 0) return [];
  const pick = () => added[Math.floor(r() * added.length)];
  const out = [];
  out.push(['added-chat', `${added[0]}system\nYou are helpful.${added[Math.min(1, added.length - 1)]}\n${pick()}user\nHello there!${pick()}`]);
  for (let i = 0; i < 6; i++) {
    out.push([`added-${i}`, `${randomWords(r, 4)}${pick()}${randomWords(r, 3)}${pick()}${pick()} x${pick()}`]);
  }
  out.push(['added-adjacent', added.slice(0, 8).join('') + ' ' + added.slice(0, 3).join(' ')]);
  out.push(['added-partial', added.slice(0, 4).map((a) => a.slice(0, Math.max(1, a.length - 1))).join(' ')]);
  return out;
}

// Variants: tokenizers derived from a fetched file (see variants.json).
const variants = JSON.parse(readFileSync(join(here, '..', 'golden', 'variants.json'), 'utf8')).variants;
for (const name of Object.keys(variants)) families[name] = `variant:${name}`;

// basePath is where a variant's base file is: fetched, or committed in the
// package's testdata when it starts "testdata/".
const basePath = (base) => base.startsWith('testdata/') ? join(here, '..', '..', base) : join(tokDir, base);

// deriveVariant builds a variant's tokenizer.json text from its base file,
// the same way golden_test.go's deriveVariant does: top-level components
// replaced, model fields (model_set) replaced, added tokens appended.
function deriveVariant(spec) {
  const base = JSON.parse(readFileSync(basePath(spec.base), 'utf8'));
  Object.assign(base, spec.set || {});
  Object.assign(base.model, spec.model_set || {});
  base.added_tokens = [...(base.added_tokens || []), ...(spec.added_tokens || [])];
  return base;
}

async function family(name, file) {
  let path = file.startsWith('testdata/') ? join(here, '..', '..', file) : join(tokDir, file);
  let json;
  if (file.startsWith('variant:')) {
    const spec = variants[name];
    if (!existsSync(basePath(spec.base))) { console.error(`skip ${name}: ${spec.base} absent`); return; }
    json = deriveVariant(spec);
    path = join(tmpdir(), `stampede-variant-${name}.json`);
    writeFileSync(path, JSON.stringify(json));
  } else {
    if (!existsSync(path)) { console.error(`skip ${name}: ${path} absent`); return; }
    json = JSON.parse(readFileSync(path, 'utf8'));
  }
  const tok = Tokenizer.fromFile(path);
  // transformers ignores a file's truncation and padding unless asked, and so do we.
  tok.disableTruncation();
  tok.disablePadding();
  const r = rng(0x5eed ^ name.length * 7919);
  const vocabSize = tok.getVocabSize(false);
  const fullSize = tok.getVocabSize(true);
  const texts = [...fixed];
  for (let i = 0; i < 12 * scale; i++) texts.push([`random-cp-${i}`, randomCodePoints(r, 20 + Math.floor(r() * 120))]);
  for (let i = 0; i < 8 * scale; i++) texts.push([`random-words-${i}`, randomWords(r, 10 + Math.floor(r() * 60))]);
  const decodeIDs = [];
  for (let i = 0; i < 12 * scale; i++) {
    const n = 5 + Math.floor(r() * 60);
    const ids = [];
    for (let j = 0; j < n; j++) ids.push(Math.floor(r() * vocabSize));
    decodeIDs.push(ids);
    texts.push([`decoded-random-${i}`, await tok.decode(ids, false)]);
  }
  for (let i = 0; i < scale; i++) texts.push(...addedTokenTexts(r, tok, json).map(([l, t]) => [`${l}-${i}`.replace(/-0$/, ''), t]));
  // Random ids over the full vocabulary, added tokens included, for decode.
  for (let i = 0; i < 8 * scale; i++) {
    const ids = [];
    for (let j = 0; j < 40; j++) ids.push(Math.floor(r() * fullSize));
    decodeIDs.push(ids);
  }
  // Their own seed, so the cases above stay as they were.
  const rp = rng(0x91a7e5 ^ name.length * 104729);
  for (let i = 0; i < 24 * scale; i++) texts.push([`random-planes-${i}`, randomPlanes(rp, 8 + Math.floor(rp() * 90))]);
  const cases = [];
  for (const [label, text] of texts) {
    const plain = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const special = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    cases.push({
      label, text, ids: Array.from(plain), special_ids: Array.from(special),
      decoded: await tok.decode(Array.from(special), false),
      decoded_skip: await tok.decode(Array.from(special), true),
    });
  }
  const decodes = [];
  for (const ids of decodeIDs) {
    decodes.push({ ids, text: await tok.decode(ids, false), text_skip: await tok.decode(ids, true) });
  }
  const out = { oracle: `tokenizers@${oracleVersion}`, file, vocab_size: vocabSize, cases, decodes };
  writeFileSync(join(outDir, `${name}.json`), JSON.stringify(out, null, 0) + '\n');
  console.error(`${name}: ${cases.length} encode cases, ${decodes.length} decode cases`);
}

const only = process.env.FAMILIES ? process.env.FAMILIES.split(',') : Object.keys(families);
for (const name of only) await family(name, families[name]);
