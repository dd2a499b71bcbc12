// bench.mjs times Hugging Face's tokenizer (npm tokenizers@0.23.2) on the
// same text and single core as BenchmarkEncode/BenchmarkDecode/BenchmarkLoad:
//
//   node datasets/tokenizer/testdata/gen/bench.mjs [ORACLE_DIR] [TOKENIZERS_DIR]
//
// Run it with RAYON_NUM_THREADS=1 beside `go test -bench . -cpu 1` so both
// sides get one core.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const oracleDir = process.argv[2] || '/tmp/tokoracle';
const tokDir = process.argv[3] || join(here, '..', '..', '..', '..', 'testdata', 'tokenizers');
const require = createRequire(join(oracleDir, 'package.json'));
const { Tokenizer } = require('tokenizers');

const families = (process.env.FAMILIES || 'llama3,qwen3,gpt4o,deepseek_v3,claude,llama2,gemma3,bert,unigram,unigram_fallback').split(',');
const variants = JSON.parse(readFileSync(join(here, '..', 'golden', 'variants.json'), 'utf8')).variants;
const filePath = (file) => file.startsWith('testdata/') ? join(here, '..', '..', file) : join(tokDir, file);

// variantPath writes a variant's tokenizer.json as golden.mjs derives it.
function variantPath(name) {
  const spec = variants[name];
  if (!existsSync(filePath(spec.base))) return filePath(spec.base);
  const json = JSON.parse(readFileSync(filePath(spec.base), 'utf8'));
  Object.assign(json, spec.set || {});
  Object.assign(json.model, spec.model_set || {});
  json.added_tokens = [...(json.added_tokens || []), ...(spec.added_tokens || [])];
  const path = join(tmpdir(), `stampede-bench-${name}.json`);
  writeFileSync(path, JSON.stringify(json));
  return path;
}

for (const family of families) {
  const g = JSON.parse(readFileSync(join(here, '..', 'golden', `${family}.json`), 'utf8'));
  const path = g.file.startsWith('variant:') ? variantPath(g.file.slice('variant:'.length)) : filePath(g.file);
  if (!existsSync(path)) { console.log(`${family}: ${path} absent`); continue; }
  const text = g.cases.filter((c) => !c.label.startsWith('added-')).map((c) => c.text).join('\n');
  let t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(path);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const ids = Array.from((await tok.encode(text, null, { addSpecialTokens: false })).getIds());
  // Rates per second of wall time and per second of the process's CPU time
  // (the figure to compare on a shared machine).
  const measure = async (fn) => {
    const budget = 2e9; // ns of wall time
    let n = 0;
    const cpu0 = process.cpuUsage();
    const t = process.hrtime.bigint();
    while (process.hrtime.bigint() - t < budget) { await fn(); n++; }
    const wall = Number(process.hrtime.bigint() - t) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const cpuSec = (cpu.user + cpu.system) / 1e6;
    return `${(ids.length * n / wall / 1e6).toFixed(2)} Mtok/s, ${(ids.length * n / cpuSec / 1e6).toFixed(2)} Mtok/cpu-s`;
  };
  const enc = await measure(() => tok.encode(text, null, { addSpecialTokens: false }));
  const dec = await measure(() => tok.decode(ids, false));
  console.log(`${family}: load ${loadMs.toFixed(0)} ms, encode ${enc}, decode ${dec} (${ids.length} tokens)`);
}
