// unigram.mjs converts a SentencePiece Unigram model (the .model protobuf
// spm_train writes) to a tokenizer.json in XLM-RoBERTa's layout, as
// transformers' XLMRobertaConverter lays it out: fairseq's four specials
// first (<s> <pad> </s> <unk>), the model's pieces after its own three
// specials, <mask> last; the model's precompiled charsmap as the
// normalizer, then runs of spaces collapsed; Metaspace; <s> $A </s>.
//
//   node unigram.mjs MODEL OUT
import { readFileSync, writeFileSync } from 'node:fs';

const [modelPath, outPath] = process.argv.slice(2);
if (!modelPath || !outPath) {
  console.error('usage: node unigram.mjs MODEL OUT');
  process.exit(2);
}

// fields decodes one protobuf message into [fieldNumber, wireType, value]
// triples: varints as numbers, 32-bit values as float32, length-delimited
// values as byte slices.
function fields(buf) {
  const out = [];
  let pos = 0;
  const varint = () => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const field = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push([field, wire, Number(varint())]);
    else if (wire === 1) { out.push([field, wire, buf.subarray(pos, pos + 8)]); pos += 8; }
    else if (wire === 5) { out.push([field, wire, buf.readFloatLE(pos)]); pos += 4; }
    else if (wire === 2) {
      const n = Number(varint());
      out.push([field, wire, buf.subarray(pos, pos + n)]);
      pos += n;
    } else throw new Error(`wire type ${wire} at ${pos}`);
  }
  return out;
}

const model = readFileSync(modelPath);
const pieces = [];
let charsmap = null;
for (const [field, , value] of fields(model)) {
  if (field === 1) {
    const p = { piece: '', score: 0, type: 1 };
    for (const [f, , v] of fields(value)) {
      if (f === 1) p.piece = v.toString('utf8');
      else if (f === 2) p.score = v;
      else if (f === 3) p.type = v;
    }
    pieces.push(p);
  } else if (field === 3) {
    for (const [f, , v] of fields(value)) if (f === 2) charsmap = Buffer.from(v);
  }
}
if (pieces.length < 4 || pieces[0].piece !== '<unk>' || pieces[1].piece !== '<s>' || pieces[2].piece !== '</s>') {
  throw new Error('expected <unk> <s> </s> as the model\'s first pieces');
}
if (!charsmap) throw new Error('the model has no precompiled charsmap');

const vocab = [['<s>', 0], ['<pad>', 0], ['</s>', 0], ['<unk>', 0]];
for (const p of pieces.slice(3)) vocab.push([p.piece, p.score]);
vocab.push(['<mask>', 0]);
const special = (id, content, lstrip = false) => ({
  id, content, single_word: false, lstrip, rstrip: false, normalized: false, special: true,
});
const metaspace = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true };
const tokenizer = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [special(0, '<s>'), special(1, '<pad>'), special(2, '</s>'), special(3, '<unk>'),
    special(vocab.length - 1, '<mask>', true)],
  normalizer: {
    type: 'Sequence',
    normalizers: [
      { type: 'Precompiled', precompiled_charsmap: charsmap.toString('base64') },
      { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
    ],
  },
  pre_tokenizer: metaspace,
  post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: true },
  decoder: metaspace,
  model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
};
// One vocabulary entry per line keeps the file diffable.
const text = JSON.stringify(tokenizer, null, 1)
  .replace(/\[\n\s+("(?:[^"\\]|\\.)*"),\n\s+(-?[0-9.e+-]+)\n\s+\]/g, '[$1, $2]');
writeFileSync(outPath, text + '\n');
